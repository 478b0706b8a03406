"""udm.graph."""
