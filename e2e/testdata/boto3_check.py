#!/usr/bin/env python3
"""Drive a Baton server through boto3 and check every answer.

Usage: boto3_check.py ENDPOINT [--protocol json|query]

ENDPOINT is the server's base URL, e.g. http://127.0.0.1:9324. The script
runs a queue's life (create, attributes, tags, send with String, Number and
Binary attributes, receive, change visibility, delete, the three batch calls,
purge, delete) and the error codes a client sees, then the answers in which
Baton once differed from Amazon SQS (issue 20), among them two clients
signing for two regions.

--protocol json uses botocore's own model (AWS JSON 1.0). --protocol query
rewrites that model into a Query-protocol one (form requests, XML answers,
as botocore spoke to SQS before 1.34.90) so both wire protocols meet a real
Python client. Every request is checked to have gone out in the chosen
protocol.

Exit status: 0 when every check passed, 1 with a message naming the first
mismatch, 77 (skip) when the Query protocol cannot be forced in the
installed botocore.
"""

import argparse
import copy
import hashlib
import json
import os
import sys
import tempfile
import time

import boto3
import botocore.loaders
import botocore.session
from botocore.config import Config
from botocore.exceptions import ClientError

SKIP = 77
FOO_MD5 = "ae7155c6026991b6d54b11589678bf9c"  # {Foo: String "Bar"}, as AWS computes it
TYPED_MD5 = "489ec3752a0fbb1b289096f88629b322"  # TYPED_ATTRS below (docs/sqs-behaviour.md §4.3)
TYPED_ATTRS = {
    "ClientId": {"DataType": "String", "StringValue": "c-42"},
    "Retries": {"DataType": "Number.int", "StringValue": "3"},
    "Blob": {"DataType": "Binary", "BinaryValue": b"\xde\xad\xbe\xef"},
}
FOO_ATTRS = {"Foo": {"DataType": "String", "StringValue": "Bar"}}
BAD_HANDLE = "not-a-receipt-handle"


class Mismatch(Exception):
    """A server answer differs from what SQS would give."""


def check(what, got, want):
    if got != want:
        raise Mismatch(f"{what}: got {got!r}, want {want!r}")


def md5_hex(s):
    return hashlib.md5(s.encode("utf-8")).hexdigest()


def text(value):
    """Returns a header or body value as a string."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return value or ""


# Element names on the Query wire, which the JSON model no longer carries
# (they are the xmlName/locationName traits of the Query-era model).
LIST_ELEMENTS = {
    "AWSAccountIdList": "AWSAccountId",
    "ActionNameList": "ActionName",
    "AttributeNameList": "AttributeName",
    "MessageSystemAttributeList": "AttributeName",
    "MessageAttributeNameList": "MessageAttributeName",
    "MessageList": "Message",
    "QueueUrlList": "QueueUrl",
    "TagKeyList": "TagKey",
    "StringList": "StringListValue",
    "BinaryList": "BinaryListValue",
}  # any other list is "<X>List" of "<X>", e.g. the batch entry lists
MAP_ELEMENTS = {  # map shape: (element, key, value)
    "QueueAttributeMap": ("Attribute", "Name", "Value"),
    "MessageSystemAttributeMap": ("Attribute", "Name", "Value"),
    "MessageBodyAttributeMap": ("MessageAttribute", "Name", "Value"),
    "MessageBodySystemAttributeMap": ("MessageSystemAttribute", "Name", "Value"),
    "TagMap": ("Tag", "Key", "Value"),
}
QUERY_ERROR_CODES = {"QueueDoesNotExist": "AWS.SimpleQueueService.NonExistentQueue"}


def query_model(model):
    """Returns a copy of the JSON service model that speaks Query."""
    model = copy.deepcopy(model)
    meta = model["metadata"]
    meta["protocol"] = "query"
    meta["protocols"] = ["query"]
    meta.pop("jsonVersion", None)
    meta.pop("targetPrefix", None)
    for name, op in model["operations"].items():
        if "output" in op:
            op["output"]["resultWrapper"] = name + "Result"
    shapes = model["shapes"]
    for name, shape in shapes.items():
        if shape["type"] == "list":
            shape["member"]["locationName"] = LIST_ELEMENTS.get(name, name.removesuffix("List"))
        elif shape["type"] == "map":
            _, key, value = MAP_ELEMENTS[name]
            shape["key"]["locationName"] = key
            shape["value"]["locationName"] = value
    for shape in shapes.values():
        for member in shape.get("members", {}).values():
            if shapes[member["shape"]]["type"] == "map":
                member["locationName"] = MAP_ELEMENTS[member["shape"]][0]
    for name, code in QUERY_ERROR_CODES.items():
        shapes[name]["error"] = {"code": code, "httpStatusCode": 400, "senderFault": True}
    return model


def botocore_session(protocol, tmpdir):
    """Returns a botocore session whose SQS model speaks protocol."""
    session = botocore.session.get_session()
    if protocol == "json":
        return session
    original = botocore.loaders.Loader()
    model = original.load_service_model("sqs", "service-2")
    version = model["metadata"]["apiVersion"]
    path = os.path.join(tmpdir, "sqs", version)
    os.makedirs(path)
    with open(os.path.join(path, "service-2.json"), "w") as f:
        json.dump(query_model(model), f)
    session.get_component("data_loader").search_paths.insert(0, tmpdir)
    return session


class Client:
    """An SQS client that checks each answer's status and protocol."""

    def __init__(self, endpoint, protocol, session, region="us-east-1"):
        self.protocol = protocol
        self.sqs = boto3.session.Session(botocore_session=session).client(
            "sqs",
            endpoint_url=endpoint,
            region_name=region,
            aws_access_key_id="AKIDBATONE2E",
            aws_secret_access_key="baton-e2e-secret",
            config=Config(retries={"total_max_attempts": 1}, connect_timeout=5, read_timeout=30),
        )
        self.requests = 0
        self.sqs.meta.events.register("before-send.sqs", self._check_request)

    def _check_request(self, request, **_):
        self.requests += 1
        ctype = text(request.headers.get("Content-Type"))
        target = request.headers.get("X-Amz-Target")
        if self.protocol == "json":
            ok = ctype.startswith("application/x-amz-json-1.0") and target
        else:
            ok = ctype.startswith("application/x-www-form-urlencoded") and not target and "Action=" in text(request.body)
        if not ok:
            raise Mismatch(f"request went out with Content-Type {ctype!r}, X-Amz-Target {target!r}; "
                           f"want the {self.protocol} protocol")

    def __call__(self, op, **params):
        """Calls op, checking it answers 200 in the protocol's content type."""
        try:
            out = getattr(self.sqs, op)(**params)
        except ClientError as e:
            raise Mismatch(f"{op}({params}) failed, want it to succeed: {e}") from e
        meta = out["ResponseMetadata"]
        check(f"{op} HTTP status", meta["HTTPStatusCode"], 200)
        ctype = meta["HTTPHeaders"].get("content-type", "")
        want = "application/x-amz-json-1.0" if self.protocol == "json" else "text/xml"
        if not ctype.startswith(want):
            raise Mismatch(f"{op} answered Content-Type {ctype!r}, want {want}")
        return out

    def error(self, op, **params):
        """Calls op, which must fail; returns the ClientError."""
        try:
            getattr(self.sqs, op)(**params)
        except ClientError as e:
            return e
        raise Mismatch(f"{op}({params}) succeeded, want an error")

    def receive(self, url, n, **params):
        """Receives until it holds n messages; fails after 15 s or on more."""
        got = []
        deadline = time.monotonic() + 15
        while len(got) < n and time.monotonic() < deadline:
            out = self("receive_message", QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1, **params)
            got += out.get("Messages", [])
        check(f"messages received from {url}", len(got), n)
        return got

    def counts(self, url, visible, in_flight):
        want = {"ApproximateNumberOfMessages": visible, "ApproximateNumberOfMessagesNotVisible": in_flight}
        deadline = time.monotonic() + 10
        while True:
            got = self("get_queue_attributes", QueueUrl=url, AttributeNames=list(want))["Attributes"]
            if got == want or time.monotonic() > deadline:
                check(f"message counts of {url}", got, want)
                return


def check_error(what, e, code, message=None):
    """Checks a ClientError's code, HTTP status 400 and, if given, message."""
    check(f"{what}: error code", e.response["Error"]["Code"], code)
    check(f"{what}: HTTP status", e.response["ResponseMetadata"]["HTTPStatusCode"], 400)
    if message is not None:
        check(f"{what}: error message", e.response["Error"].get("Message"), message)


def check_no_such_queue(what, client, e):
    """Checks e is the error of a queue that does not exist, as botocore models it."""
    check_error(what, e, "AWS.SimpleQueueService.NonExistentQueue")
    if not isinstance(e, client.sqs.exceptions.QueueDoesNotExist):
        raise Mismatch(f"{what} raised {type(e).__name__}, want QueueDoesNotExist")


def string_attrs(**values):
    return {name: {"DataType": "String", "StringValue": v} for name, v in values.items()}


def attributes_md5(attrs):
    """MD5OfMessageAttributes of String attributes, computed as the Amazon SQS
    Developer Guide describes ("Calculating the MD5 message digest for
    message attributes"): by name in ascending order, the name, data type and
    value each as a 4-byte big-endian length and its UTF-8 bytes, a 1 before
    the value."""
    if not attrs:
        return None
    b = b""
    for name in sorted(attrs):
        for part, s in enumerate((name, attrs[name]["DataType"], attrs[name]["StringValue"])):
            if part == 2:
                b += b"\x01"
            raw = s.encode("utf-8")
            b += len(raw).to_bytes(4, "big") + raw
    return hashlib.md5(b).hexdigest()


def check_batch(op, out, want_ids, bad=None):
    """Checks a batch answer: want_ids succeeded, and only bad failed, as an
    invalid handle. An answer without failures has no Failed at all, in
    either protocol (docs/sqs-behaviour.md §1.2)."""
    check(f"{op} Successful ids", sorted(e["Id"] for e in out.get("Successful", [])), sorted(want_ids))
    want_failed = []
    if not bad:
        check(f"{op} without failures: Failed in the answer", out.get("Failed", "absent"), "absent")
    else:
        want_failed = [{"Id": bad, "SenderFault": True, "Code": "ReceiptHandleIsInvalid"}]
    failed = [{k: e.get(k) for k in ("Id", "SenderFault", "Code")} for e in out.get("Failed", [])]
    check(f"{op} Failed", failed, want_failed)


def run(endpoint, protocol, client):
    name = f"e2e-boto3-{protocol}"

    # Queues.
    url = client("create_queue", QueueName=name, Attributes={"VisibilityTimeout": "30"}, tags={"team": "baton"})["QueueUrl"]
    if not url.startswith(endpoint + "/") or not url.endswith("/" + name):
        raise Mismatch(f"create_queue QueueUrl: got {url!r}, want {endpoint}/<account>/{name}")
    check("get_queue_url", client("get_queue_url", QueueName=name)["QueueUrl"], url)
    check("list_queues", client("list_queues", QueueNamePrefix=name).get("QueueUrls"), [url])
    attrs = client("get_queue_attributes", QueueUrl=url, AttributeNames=["All"])["Attributes"]
    check("VisibilityTimeout after create", attrs.get("VisibilityTimeout"), "30")
    if not attrs.get("QueueArn", "").endswith(":" + name):
        raise Mismatch(f"QueueArn: got {attrs.get('QueueArn')!r}, want arn:aws:sqs:...:{name}")
    client("set_queue_attributes", QueueUrl=url, Attributes={"VisibilityTimeout": "60"})
    attrs = client("get_queue_attributes", QueueUrl=url, AttributeNames=["VisibilityTimeout"])["Attributes"]
    check("attributes after set_queue_attributes", attrs, {"VisibilityTimeout": "60"})

    # Tags.
    check("tags after create", client("list_queue_tags", QueueUrl=url).get("Tags"), {"team": "baton"})
    client("tag_queue", QueueUrl=url, Tags={"env": "ci"})
    client("untag_queue", QueueUrl=url, TagKeys=["team"])
    check("tags after tag and untag", client("list_queue_tags", QueueUrl=url).get("Tags"), {"env": "ci"})

    # Messages with attributes.
    sent = {}
    out = client("send_message", QueueUrl=url, MessageBody="Hello, SQS!", MessageAttributes=TYPED_ATTRS)
    check("send_message MD5OfMessageBody", out["MD5OfMessageBody"], "982e00ffc10ba49378a8653ca8fecf47")
    check("send_message MD5OfMessageAttributes (String, Number.int, Binary)", out["MD5OfMessageAttributes"], TYPED_MD5)
    sent[out["MessageId"]] = ("Hello, SQS!", TYPED_ATTRS, TYPED_MD5)
    out = client("send_message", QueueUrl=url, MessageBody="with Foo", MessageAttributes=FOO_ATTRS)
    check("send_message MD5OfMessageAttributes {Foo: Bar}", out["MD5OfMessageAttributes"], FOO_MD5)
    sent[out["MessageId"]] = ("with Foo", FOO_ATTRS, FOO_MD5)
    out = client("send_message", QueueUrl=url, MessageBody="plain")
    check("send_message without attributes: MD5OfMessageAttributes", out.get("MD5OfMessageAttributes"), None)
    sent[out["MessageId"]] = ("plain", None, None)

    received = client.receive(url, 3, MessageSystemAttributeNames=["All"], MessageAttributeNames=["All"])
    for m in received:
        if m["MessageId"] not in sent:
            raise Mismatch(f"received unknown message {m['MessageId']}")
        body, want_attrs, want_md5 = sent[m["MessageId"]]
        check(f"{body!r} Body", m["Body"], body)
        check(f"{body!r} MD5OfBody", m["MD5OfBody"], md5_hex(body))
        check(f"{body!r} MD5OfMessageAttributes", m.get("MD5OfMessageAttributes"), want_md5)
        check(f"{body!r} MessageAttributes", m.get("MessageAttributes"), want_attrs)
        check(f"{body!r} ApproximateReceiveCount", m["Attributes"].get("ApproximateReceiveCount"), "1")
        check(f"{body!r} system attribute names", sorted(m["Attributes"]),
              ["ApproximateFirstReceiveTimestamp", "ApproximateReceiveCount", "SenderId", "SentTimestamp"])
    client.counts(url, "0", "3")

    # Change visibility, then delete with the newest handle.
    first = received[0]
    client("change_message_visibility", QueueUrl=url, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=0)
    again = client.receive(url, 1, AttributeNames=["ApproximateReceiveCount"])[0]
    check("message id received after change_message_visibility 0", again["MessageId"], first["MessageId"])
    check("Attributes received after change_message_visibility 0", again["Attributes"], {"ApproximateReceiveCount": "2"})
    for m in received[1:] + [again]:
        client("delete_message", QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    client.counts(url, "0", "0")

    # The three batch calls, each with one invalid receipt handle.
    entries = [
        {"Id": "a", "MessageBody": "batch a"},
        {"Id": "b", "MessageBody": "batch b", "MessageAttributes": FOO_ATTRS},
        {"Id": "c", "MessageBody": "batch c", "DelaySeconds": 0},
    ]
    out = client("send_message_batch", QueueUrl=url, Entries=entries)
    check_batch("send_message_batch", out, ["a", "b", "c"])
    for e in out["Successful"]:
        check(f"send_message_batch {e['Id']} MD5OfMessageBody", e["MD5OfMessageBody"], md5_hex("batch " + e["Id"]))
        check(f"send_message_batch {e['Id']} MD5OfMessageAttributes", e.get("MD5OfMessageAttributes"),
              FOO_MD5 if e["Id"] == "b" else None)

    def handles(messages, **extra):
        out = [{"Id": m["Body"].removeprefix("batch "), "ReceiptHandle": m["ReceiptHandle"], **extra} for m in messages]
        return out + [{"Id": "bad", "ReceiptHandle": BAD_HANDLE, **extra}]

    messages = client.receive(url, 3)
    out = client("change_message_visibility_batch", QueueUrl=url, Entries=handles(messages, VisibilityTimeout=0))
    check_batch("change_message_visibility_batch", out, ["a", "b", "c"], bad="bad")
    messages = client.receive(url, 3)
    out = client("delete_message_batch", QueueUrl=url, Entries=handles(messages))
    check_batch("delete_message_batch", out, ["a", "b", "c"], bad="bad")
    client.counts(url, "0", "0")

    # Purge and delete.
    client("send_message", QueueUrl=url, MessageBody="purge me")
    client.counts(url, "1", "0")
    client("purge_queue", QueueUrl=url)
    client.counts(url, "0", "0")

    # Errors: code and status as botocore reports them.
    e = client.error("get_queue_url", QueueName=f"e2e-boto3-{protocol}-missing")
    check("get_queue_url of a missing queue: error code", e.response["Error"]["Code"], "AWS.SimpleQueueService.NonExistentQueue")
    check("get_queue_url of a missing queue: HTTP status", e.response["ResponseMetadata"]["HTTPStatusCode"], 400)
    if not isinstance(e, client.sqs.exceptions.QueueDoesNotExist):
        raise Mismatch(f"get_queue_url of a missing queue raised {type(e).__name__}, want QueueDoesNotExist")
    e = client.error("receive_message", QueueUrl=url, MaxNumberOfMessages=11)
    check("receive_message MaxNumberOfMessages=11: error code", e.response["Error"]["Code"], "InvalidParameterValue")
    check("receive_message MaxNumberOfMessages=11: HTTP status", e.response["ResponseMetadata"]["HTTPStatusCode"], 400)
    e = client.error("delete_message", QueueUrl=url, ReceiptHandle=BAD_HANDLE)
    check("delete_message with an invalid handle: error code", e.response["Error"]["Code"], "ReceiptHandleIsInvalid")

    client("delete_queue", QueueUrl=url)
    deadline = time.monotonic() + 10
    while True:  # deletion may take a moment (docs/sqs-behaviour.md §2)
        try:
            client.sqs.send_message(QueueUrl=url, MessageBody="too late")
        except ClientError as e:
            check("send_message to a deleted queue: error code", e.response["Error"]["Code"],
                  "AWS.SimpleQueueService.NonExistentQueue")
            break
        if time.monotonic() > deadline:
            raise Mismatch("send_message to a deleted queue still succeeds 10 s after delete_queue")
        time.sleep(0.05)


def run_fidelity(endpoint, protocol, client, eu):
    """Checks answers in which Baton once differed from Amazon SQS (issue 20).
    eu is a client like client, signing for eu-central-1."""
    prefix = f"e2e-boto3-{protocol}-fidelity"

    # A boolean attribute is read in any case, as CloudFormation sends
    # FifoQueue "True", and GetQueueAttributes writes it in lower case
    # (CreateQueue API reference: "Valid values: true, false").
    fifos = {}
    for v in ("True", "TRUE"):
        name = f"{prefix}-{v}.fifo"
        fifos[v] = url = client("create_queue", QueueName=name,
                                Attributes={"FifoQueue": v, "ContentBasedDeduplication": v})["QueueUrl"]
        attrs = client("get_queue_attributes", QueueUrl=url, AttributeNames=["All"])["Attributes"]
        check(f"create_queue {name} FifoQueue={v}: FifoQueue", attrs.get("FifoQueue"), "true")
        check(f"create_queue {name} FifoQueue={v}: ContentBasedDeduplication", attrs.get("ContentBasedDeduplication"), "true")
        out = client("send_message", QueueUrl=url, MessageBody="in order", MessageGroupId="g")
        if not out.get("SequenceNumber"):
            raise Mismatch(f"send_message to {name}: no SequenceNumber, want one as a FIFO queue gives")
    fifo = fifos["True"]

    # An empty MessageGroupId or MessageDeduplicationId is an invalid value,
    # not an absent one ("1 to 128 in length", SendMessage API reference);
    # in a batch only that entry fails.
    invalid = ("Value  for parameter {0} is invalid. Reason: {0} can only include alphanumeric "
               "and punctuation characters. 1 to 128 in length.")
    for param, ids in (("MessageGroupId", {"MessageGroupId": "", "MessageDeduplicationId": "d"}),
                       ("MessageDeduplicationId", {"MessageGroupId": "g", "MessageDeduplicationId": ""})):
        e = client.error("send_message", QueueUrl=fifo, MessageBody="x", **ids)
        check_error(f"send_message with {param} \"\"", e, "InvalidParameterValue", invalid.format(param))
        out = client("send_message_batch", QueueUrl=fifo, Entries=[
            {"Id": "bad", "MessageBody": "x", **ids},
            {"Id": "good", "MessageBody": "y", "MessageGroupId": "g", "MessageDeduplicationId": "good"},
        ])
        check(f"send_message_batch with {param} \"\": Successful ids", [e["Id"] for e in out.get("Successful", [])], ["good"])
        failed = [{k: e.get(k) for k in ("Id", "SenderFault", "Code", "Message")} for e in out.get("Failed", [])]
        check(f"send_message_batch with {param} \"\": Failed", failed,
              [{"Id": "bad", "SenderFault": True, "Code": "InvalidParameterValue", "Message": invalid.format(param)}])

    # MessageAttributeNames: "All", ".*" and "*" ask for every attribute,
    # "Hel.*" for those whose name starts with "Hel" (ReceiveMessage API
    # reference: "return all of the attributes by specifying All or .* …
    # all message attributes starting with a prefix, for example bar.*").
    url = client("create_queue", QueueName=f"{prefix}-patterns", Attributes={"VisibilityTimeout": "0"})["QueueUrl"]
    attrs = string_attrs(**{"Help.Me": "Me", "Hello": "There", "General": "Kenobi"})
    out = client("send_message", QueueUrl=url, MessageBody="patterns", MessageAttributes=attrs)
    check("send_message Help.Me, Hello, General: MD5OfMessageAttributes", out["MD5OfMessageAttributes"], attributes_md5(attrs))
    for names, want in ((["Hel.*"], ["Hello", "Help.Me"]), ([".*"], sorted(attrs)), (["All"], sorted(attrs)),
                        (["*"], sorted(attrs)), (["Hello", "Nope"], ["Hello"])):
        m = client.receive(url, 1, MessageAttributeNames=names)[0]
        got = m.get("MessageAttributes", {})
        check(f"receive_message MessageAttributeNames={names}: attributes", sorted(got), want)
        check(f"receive_message MessageAttributeNames={names}: values", got, {n: attrs[n] for n in want})
        check(f"receive_message MessageAttributeNames={names}: MD5OfMessageAttributes", m.get("MD5OfMessageAttributes"),
              attributes_md5({n: attrs[n] for n in want}))

    # An attribute name may hold letters of any script ("alphanumeric", the
    # SendMessage API reference); the digest covers its UTF-8 bytes.
    url = client("create_queue", QueueName=f"{prefix}-names")["QueueUrl"]
    attrs = string_attrs(**{"attr.1øßä": "Valida"})
    out = client("send_message", QueueUrl=url, MessageBody="any script", MessageAttributes=attrs)
    check("send_message attribute attr.1øßä: MD5OfMessageAttributes", out.get("MD5OfMessageAttributes"), attributes_md5(attrs))
    m = client.receive(url, 1, MessageAttributeNames=["attr.*"])[0]
    check("receive_message attr.*: MessageAttributes", m.get("MessageAttributes"), attrs)
    check("receive_message attr.*: MD5OfMessageAttributes", m.get("MD5OfMessageAttributes"), attributes_md5(attrs))

    # A handle of an earlier receive addresses the message while it is in
    # flight again: an extension through it holds the message past the
    # current lease, singly and in a batch, and visibility 0 through it
    # releases the message (docs/sqs-behaviour.md §5).
    url = client("create_queue", QueueName=f"{prefix}-leases")["QueueUrl"]
    for body in ("single", "batch"):
        client("send_message", QueueUrl=url, MessageBody=body)
    first = {}  # body: the receipt handle of its first receive
    deadline = time.monotonic() + 15
    while len(first) < 2 and time.monotonic() < deadline:  # visibility 0 leaves them visible
        out = client("receive_message", QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1, VisibilityTimeout=0)
        for m in out.get("Messages", []):
            first.setdefault(m["Body"], m["ReceiptHandle"])
    check("messages received with VisibilityTimeout 0", sorted(first), ["batch", "single"])
    lease = 2
    leased_at = time.monotonic()
    second = client.receive(url, 2, VisibilityTimeout=lease, MessageSystemAttributeNames=["ApproximateReceiveCount"])
    client("change_message_visibility", QueueUrl=url, ReceiptHandle=first["single"], VisibilityTimeout=60)
    out = client("change_message_visibility_batch", QueueUrl=url,
                 Entries=[{"Id": "old", "ReceiptHandle": first["batch"], "VisibilityTimeout": 60}])
    changed_after = time.monotonic() - leased_at
    check_batch("change_message_visibility_batch with an earlier handle", out, ["old"])
    time.sleep(max(0.0, leased_at + 2 * lease - time.monotonic()))
    out = client("receive_message", QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
    if out.get("Messages"):
        raise Mismatch(f"receive_message {2 * lease} s after a {lease} s lease of messages extended by 60 s through "
                       f"the handles of an earlier receive ({changed_after:.1f} s into the lease): "
                       f"got {sorted(m['Body'] for m in out['Messages'])}, want none")
    client.counts(url, "0", "2")
    client("change_message_visibility", QueueUrl=url, ReceiptHandle=first["single"], VisibilityTimeout=0)
    m = client.receive(url, 1, MessageSystemAttributeNames=["ApproximateReceiveCount"])[0]
    check("message received after visibility 0 through its earlier handle", m["Body"], "single")
    count = next(int(s["Attributes"]["ApproximateReceiveCount"]) for s in second if s["Body"] == "single")
    check("ApproximateReceiveCount after the release", m["Attributes"]["ApproximateReceiveCount"], str(count + 1))
    out = client("delete_message_batch", QueueUrl=url, Entries=[
        {"Id": "single", "ReceiptHandle": m["ReceiptHandle"]}, {"Id": "batch", "ReceiptHandle": first["batch"]}])
    check_batch("delete_message_batch", out, ["single", "batch"])
    client.counts(url, "0", "0")

    # RedrivePolicy may name the queue itself, and "" removes it
    # (SetQueueAttributes API reference).
    url = client("create_queue", QueueName=f"{prefix}-selfie")["QueueUrl"]
    arn = client("get_queue_attributes", QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    policy = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 5})
    client("set_queue_attributes", QueueUrl=url, Attributes={"RedrivePolicy": policy})
    attrs = client("get_queue_attributes", QueueUrl=url, AttributeNames=["RedrivePolicy"]).get("Attributes", {})
    check("RedrivePolicy naming the queue itself", json.loads(attrs.get("RedrivePolicy", "null")),
          {"deadLetterTargetArn": arn, "maxReceiveCount": 5})
    client("set_queue_attributes", QueueUrl=url, Attributes={"RedrivePolicy": ""})
    attrs = client("get_queue_attributes", QueueUrl=url, AttributeNames=["All"]).get("Attributes", {})
    check("RedrivePolicy after setting it to \"\"", attrs.get("RedrivePolicy"), None)

    # A QueueUrl without a path names no queue (docs/sqs-behaviour.md §1.5).
    for bare in (endpoint, endpoint + "/", "http://host"):
        e = client.error("get_queue_attributes", QueueUrl=bare, AttributeNames=["All"])
        check_no_such_queue(f"get_queue_attributes QueueUrl={bare}", client, e)

    # AddPermission grants only actions another account may invoke
    # ("Limitations of Amazon SQS custom policies", Amazon SQS Developer
    # Guide): CreateQueue is the owner's.
    e = client.error("add_permission", QueueUrl=url, Label="share", AWSAccountIds=["111111111111"],
                     Actions=["SendMessage", "CreateQueue"])
    check_error("add_permission CreateQueue", e, "InvalidParameterValue",
                "Value SQS:CreateQueue for parameter ActionName is invalid. "
                "Reason: Only the queue owner is allowed to invoke this action.")

    # Regions: a client signing for another region sees other queues, one
    # name being two queues with the region in their ARNs
    # (docs/sqs-behaviour.md §1.5).
    name = f"{prefix}-regional"
    us_url = client("create_queue", QueueName=name, Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    eu_url = eu("create_queue", QueueName=name, Attributes={"VisibilityTimeout": "45"})["QueueUrl"]
    account = us_url.split("/")[-2]
    for c, u, region, vt in ((client, us_url, "us-east-1", "30"), (eu, eu_url, "eu-central-1", "45")):
        attrs = c("get_queue_attributes", QueueUrl=u, AttributeNames=["QueueArn", "VisibilityTimeout"])["Attributes"]
        check(f"{name} in {region}: attributes", attrs,
              {"QueueArn": f"arn:aws:sqs:{region}:{account}:{name}", "VisibilityTimeout": vt})
    eu("send_message", QueueUrl=eu_url, MessageBody="in eu-central-1")
    client.counts(us_url, "0", "0")
    eu.counts(eu_url, "1", "0")
    eu("create_queue", QueueName=f"{name}-eu-only")
    e = client.error("get_queue_url", QueueName=f"{name}-eu-only")
    check_no_such_queue(f"get_queue_url from us-east-1 of {name}-eu-only in eu-central-1", client, e)
    check(f"get_queue_url from eu-central-1 of {name}-eu-only", eu("get_queue_url", QueueName=f"{name}-eu-only")["QueueUrl"],
          f"{endpoint}/{account}/{name}-eu-only")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("endpoint", help="the server's base URL, e.g. http://127.0.0.1:9324")
    parser.add_argument("--protocol", choices=["json", "query"], default="json")
    args = parser.parse_args()
    endpoint = args.endpoint.rstrip("/")
    with tempfile.TemporaryDirectory() as tmpdir:
        try:
            session = botocore_session(args.protocol, tmpdir)
            client = Client(endpoint, args.protocol, session)
        except Exception as e:  # a botocore whose loader or model differs
            if args.protocol == "query":
                print(f"SKIP: cannot force the Query protocol in botocore {botocore.__version__}: {e!r}")
                return SKIP
            raise
        got = client.sqs.meta.service_model.protocol
        if got != args.protocol:
            if args.protocol == "query":
                print(f"SKIP: botocore {botocore.__version__} ignored the rewritten model (protocol {got!r})")
                return SKIP
            raise Mismatch(f"service model protocol: got {got!r}, want {args.protocol!r}")
        eu = Client(endpoint, args.protocol, session, region="eu-central-1")
        try:
            run(endpoint, args.protocol, client)
            run_fidelity(endpoint, args.protocol, client, eu)
        except Mismatch as e:
            print(f"FAIL (boto3 {boto3.__version__}, {args.protocol} protocol): {e}", file=sys.stderr)
            return 1
    print(f"boto3 {boto3.__version__} ({args.protocol} protocol): {client.requests + eu.requests} requests, "
          "every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
