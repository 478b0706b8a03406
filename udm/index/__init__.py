"""udm.index."""
