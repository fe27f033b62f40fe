"""The database layer: table definitions, engine and transactions, migrations."""
