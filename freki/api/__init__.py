"""Freki's gRPC face.

``servicer.FrekiServicer`` implements ``wolf.v1.FrekiService``; requests are checked by ``validation`` and
mapped to and from domain objects by ``convert``. ``server.build_server`` / ``server.serve`` start and stop it
(health, reflection, graceful shutdown); ``operations`` adds metrics, audit and hot reload.
"""
