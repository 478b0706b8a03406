"""udm.site."""
