"""Drive a Baton server through kombu's SQS transport and a Celery worker.

Usage: python3 celery_check.py ENDPOINT
       python3 celery_check.py --probe   (exits 0 when kombu, Celery, boto3
                                          and pycurl import)

kombu: a SimpleQueue puts a message on an SQS queue it creates, gets it back
and acks it (a DeleteMessage). Celery: a task sent with delay() runs in a
worker started in this process (the solo pool), which consumes the queue
through kombu's asynchronous SQS client (pycurl) as a deployed worker does.
Exits 0 when both round trips completed, 1 naming what failed.
"""

import sys
import threading
import time
import urllib.parse

try:
    import boto3  # noqa: F401 (kombu's SQS transport needs it)
    import pycurl  # noqa: F401 (and this, for the worker's asynchronous client)
    import celery
    import kombu
    from celery.contrib.testing.worker import start_worker
except ImportError as err:
    print(f"kombu/Celery not usable: {err}", file=sys.stderr)
    sys.exit(2)

if sys.argv[1] == "--probe":
    sys.exit(0)

endpoint = urllib.parse.urlsplit(sys.argv[1])
# kombu builds the SQS endpoint from the broker URL's host and port; the
# key and secret are the URL's user and password.
broker = f"sqs://AKIDBATONE2E:baton-e2e-secret@{endpoint.hostname}:{endpoint.port}"
options = {"region": "us-east-1", "is_secure": False, "wait_time_seconds": 1, "polling_interval": 0.1}


def check_kombu():
    with kombu.Connection(broker, transport_options=options) as conn:
        q = conn.SimpleQueue("kombu-check")
        q.put({"hello": "kombu"})
        msg = q.get(block=True, timeout=20)
        if msg.payload != {"hello": "kombu"}:
            raise AssertionError(f"kombu got {msg.payload!r}")
        msg.ack()
        q.close()


def check_celery():
    app = celery.Celery("baton-check", broker=broker)
    app.conf.broker_transport_options = options
    app.conf.task_default_queue = "celery-check"
    app.conf.worker_hijack_root_logger = False
    ran = threading.Event()
    got = []

    @app.task(name="baton_check.add")
    def add(x, y):
        got.append(x + y)
        ran.set()

    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=30):
        add.delay(2, 3)
        if not ran.wait(30):
            raise AssertionError("the Celery worker did not run the task within 30 s")
    if got != [5]:
        raise AssertionError(f"the task ran with {got!r}, want [5]")


began = time.monotonic()
try:
    check_kombu()
    kombu_took = time.monotonic() - began
    check_celery()
except Exception as err:  # report any failure as the check's
    print(f"FAIL: {type(err).__name__}: {err}", file=sys.stderr)
    sys.exit(1)
celery_took = time.monotonic() - began - kombu_took
print(f"kombu {kombu.__version__} ({kombu_took:.1f} s) and Celery {celery.__version__} ({celery_took:.1f} s): "
      "round trips through Baton passed")
