"""udm.research."""
