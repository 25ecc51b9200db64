"""The throw-away loopback Ray head survives a port taken between choosing and binding it."""

from __future__ import annotations

import socket

import pytest


@pytest.mark.integration
def test_head_start_retries_with_fresh_ports_when_its_port_is_taken():
    from backends.ray_head import LocalRayHead

    head = LocalRayHead(num_cpus=1, num_gpus=1)
    blocker = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    blocker.bind(("127.0.0.1", head.gcs_port))
    blocker.listen(1)
    taken = head.gcs_port
    try:
        head.start()
        assert head.gcs_port != taken
        import httpx

        assert httpx.get(head.address + "/api/version", timeout=5, trust_env=False).status_code == 200
    finally:
        head.stop()
        blocker.close()
