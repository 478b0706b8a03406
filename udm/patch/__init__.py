"""udm.patch."""
