"""`ix view`: a local, read-only web viewer of a lab (`pip install 'ix-lab[view]'`).

`ix.view.app.create_app(lab)` builds the Starlette app; `ix.view.server.serve` runs it with
uvicorn on 127.0.0.1. The viewer reads the lab through `ix.api` only (docs/view.md).
"""
