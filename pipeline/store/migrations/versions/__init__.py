"""One file per revision, `NNNN_what.py`, each naming its `down_revision`: the chain is the schema's history."""
