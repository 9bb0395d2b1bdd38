"""The `ix` command: parses, calls `ix.api`, prints. Nothing else lives here."""
