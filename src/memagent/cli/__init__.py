"""Command line: the only package that imports typer. Heavy libraries are imported lazily."""
