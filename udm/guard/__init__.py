"""udm.guard."""
