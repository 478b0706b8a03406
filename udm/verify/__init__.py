"""udm.verify."""
