"""udm.markdown."""
