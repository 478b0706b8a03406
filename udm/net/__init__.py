"""udm.net."""
