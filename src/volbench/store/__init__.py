"""The SQLite result store: schema versions, migrations, bulk reads."""
