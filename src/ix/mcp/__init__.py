"""`ix mcp`: the lab served to an MCP client (Claude Code) over stdio (docs/mcp.md).

`server.build_server(lab)` makes the server, `server.serve(lab)` runs it on stdin/stdout.
Every tool goes through `ix.api` and nothing below it (an import-linter contract). Needs the
`mcp` extra (`pip install 'ix-lab[mcp]'`); importing this package alone does not.
"""
