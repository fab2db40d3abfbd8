"""The ``routing`` check family at scale against ibsim + OpenSM (``python -m bench.routing``)."""
