"""A moto S3 server on 127.0.0.1 for tests of the data lake on an object store."""

import os
import socket
import uuid
from collections.abc import Iterator

import fsspec
import pytest

BUCKET = "formula-lake"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3() -> Iterator[str]:
    """A moto S3 server on 127.0.0.1, and s3fs pointed at it through fsspec's settings."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    saved = dict(os.environ)
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
    )
    previous = dict(fsspec.config.conf.get("s3", {}))
    fsspec.config.conf["s3"] = {"endpoint_url": f"http://127.0.0.1:{port}"}
    try:
        # moto keeps its buckets in the process, across servers: a bucket of its own per module
        bucket = f"{BUCKET}-{uuid.uuid4().hex[:12]}"
        filesystem = fsspec.filesystem("s3", skip_instance_cache=True)
        filesystem.mkdir(bucket)
        yield f"s3://{bucket}"
    finally:
        fsspec.config.conf["s3"] = previous
        os.environ.clear()
        os.environ.update(saved)
        server.stop()
