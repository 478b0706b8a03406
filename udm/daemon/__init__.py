"""udm.daemon."""
