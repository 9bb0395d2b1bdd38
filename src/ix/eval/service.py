"""The seed's import path of the `Storage` protocol (domain models seed, "Eval Protocols"):
it is defined in `ix.domain.ports`, and `ix.store.lab_storage.LabStorage` implements it."""

from ix.domain.ports import Storage

__all__ = ["Storage"]
