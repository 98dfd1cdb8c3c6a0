"""Result files and what they hold: the schema, cells, safe files, importers. Pure: never imports measure."""
