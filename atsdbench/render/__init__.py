"""Every table and picture. Pure: never imports measure."""
