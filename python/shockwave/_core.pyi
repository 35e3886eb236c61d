"""Type stubs of the compiled extension ``shockwave._core`` (Rust, PyO3)."""

def core_version() -> str:
    """Version of the Rust core compiled into this extension."""
