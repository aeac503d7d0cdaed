#!/usr/bin/env python3
"""Drive Baton's SNS API through boto3 and check every answer.

Usage: boto3_sns_check.py ENDPOINT

A topic's life (create, again, attributes, subscribe a queue, list, publish,
batch, tags, unsubscribe, delete) and AWS's errors, seen by boto3 (botocore's
SNS model: Query protocol, non-flattened lists and maps); the envelope a
queue receives is checked member by member, its attributes in the order
published, and its signature verified with the certificate fetched from
its SigningCertURL, as a subscriber verifies one.

Exit status: 0 when every check passed, 1 with a message naming the first
mismatch, 77 (skip) when the `cryptography` package is missing.
"""

import base64
import json
import sys
import urllib.request

import boto3
from botocore.exceptions import ClientError

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding
except ImportError:
    print("the cryptography package is missing: cannot verify signatures")
    sys.exit(77)


def check(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


def expect_error(f, code, status, message=None):
    try:
        f()
    except ClientError as e:
        err = e.response["Error"]
        got_status = e.response["ResponseMetadata"]["HTTPStatusCode"]
        check(err["Code"] == code and got_status == status, f"error {err['Code']} {got_status}, want {code} {status}")
        if message is not None:
            check(err["Message"] == message, f"message {err['Message']!r}, want {message!r}")
        return
    check(False, f"no error, want {code}")


def verify(env):
    pem = urllib.request.urlopen(env["SigningCertURL"]).read()
    cert = x509.load_pem_x509_certificate(pem)
    sts = "".join(f"{k}\n{env[k]}\n" for k in ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"] if k in env)
    algo = hashes.SHA1() if env["SignatureVersion"] == "1" else hashes.SHA256()
    cert.public_key().verify(base64.b64decode(env["Signature"]), sts.encode(), padding.PKCS1v15(), algo)


def main():
    endpoint = sys.argv[1]
    sns = boto3.client("sns", endpoint_url=endpoint, region_name="us-east-1")
    sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")

    arn = sns.create_topic(Name="py-topic", Tags=[{"Key": "team", "Value": "a"}])["TopicArn"]
    account = arn.split(":")[4]
    check(arn == f"arn:aws:sns:us-east-1:{account}:py-topic", f"TopicArn {arn}")
    check(sns.create_topic(Name="py-topic")["TopicArn"] == arn, "CreateTopic again")
    expect_error(lambda: sns.create_topic(Name="py-topic", Attributes={"DisplayName": "x"}), "InvalidParameter", 400,
                 "Invalid parameter: Attributes Reason: Topic already exists with different attributes")
    expect_error(lambda: sns.create_topic(Name="bad name"), "InvalidParameter", 400, "Invalid parameter: Topic Name")
    attrs = sns.get_topic_attributes(TopicArn=arn)["Attributes"]
    check(sorted(attrs) == ["DisplayName", "EffectiveDeliveryPolicy", "Owner", "Policy", "SubscriptionsConfirmed",
                            "SubscriptionsDeleted", "SubscriptionsPending", "TopicArn"], f"topic attributes {sorted(attrs)}")
    expect_error(lambda: sns.get_topic_attributes(TopicArn=arn + "x"), "NotFound", 404, "Topic does not exist")
    try:
        sns.get_topic_attributes(TopicArn=arn + "x")
    except sns.exceptions.NotFoundException:
        pass
    check(any(t["TopicArn"] == arn for t in sns.list_topics()["Topics"]), "ListTopics")

    qurl = sqs.create_queue(QueueName="py-env")["QueueUrl"]
    qarn = f"arn:aws:sqs:us-east-1:{account}:py-env"
    sub = sns.subscribe(TopicArn=arn, Protocol="sqs", Endpoint=qarn)["SubscriptionArn"]
    check(sub.startswith(arn + ":"), f"SubscriptionArn {sub}")
    subs = sns.list_subscriptions_by_topic(TopicArn=arn)["Subscriptions"]
    check([s["SubscriptionArn"] for s in subs] == [sub], f"ListSubscriptionsByTopic {subs}")
    check(sns.get_subscription_attributes(SubscriptionArn=sub)["Attributes"]["RawMessageDelivery"] == "false", "RawMessageDelivery")

    out = sns.publish(TopicArn=arn, Message='{"order": 7} </tag>', Subject="New order",
                      MessageAttributes={"zeta": {"DataType": "String", "StringValue": "z"},
                                         "alpha": {"DataType": "Number", "StringValue": "12.5"},
                                         "blob": {"DataType": "Binary", "BinaryValue": b"\x01\x02"}})
    msgs = sqs.receive_message(QueueUrl=qurl, MaxNumberOfMessages=10)["Messages"]
    check(len(msgs) == 1, f"{len(msgs)} messages")
    body = msgs[0]["Body"]
    env = json.loads(body)
    check(env["Type"] == "Notification" and env["MessageId"] == out["MessageId"] and env["TopicArn"] == arn, f"envelope {env}")
    check(env["Message"] == '{"order": 7} </tag>' and env["Subject"] == "New order" and env["SignatureVersion"] == "1", f"envelope {env}")
    check(list(env["MessageAttributes"]) == ["zeta", "alpha", "blob"], f"attribute order {list(env['MessageAttributes'])}")
    check(env["MessageAttributes"]["blob"] == {"Type": "Binary", "Value": "AQI="}, f"binary {env['MessageAttributes']['blob']}")
    check(body.startswith('{\n  "Type" : "Notification",\n  "MessageId" : '), f"layout {body[:60]!r}")
    verify(env)

    batch = sns.publish_batch(TopicArn=arn, PublishBatchRequestEntries=[
        {"Id": "a", "Message": "one"}, {"Id": "b", "Message": "two"}])
    check(len(batch["Successful"]) == 2 and batch["Failed"] == [], f"PublishBatch {batch}")
    expect_error(lambda: sns.publish_batch(TopicArn=arn, PublishBatchRequestEntries=[
        {"Id": "a", "Message": "one"}, {"Id": "a", "Message": "two"}]), "BatchEntryIdsNotDistinct", 400)
    expect_error(lambda: sns.publish(TopicArn=arn, Message="m", MessageAttributes={"a": {"DataType": "Stringx", "StringValue": "v"}}),
                 "ParameterValueInvalid", 400)

    check(sns.list_tags_for_resource(ResourceArn=arn)["Tags"] == [{"Key": "team", "Value": "a"}], "ListTagsForResource")
    sns.tag_resource(ResourceArn=arn, Tags=[{"Key": "env", "Value": "dev"}])
    sns.untag_resource(ResourceArn=arn, TagKeys=["team"])
    check(sns.list_tags_for_resource(ResourceArn=arn)["Tags"] == [{"Key": "env", "Value": "dev"}], "tags after changes")

    sns.unsubscribe(SubscriptionArn=sub)
    check(sns.list_subscriptions()["Subscriptions"] == [], "subscriptions after Unsubscribe")
    sns.delete_topic(TopicArn=arn)
    sns.delete_topic(TopicArn=arn)
    expect_error(lambda: sns.get_topic_attributes(TopicArn=arn), "NotFound", 404)
    print("boto3 SNS: every check passed")


main()
