// Drive a Baton server's SNS API through the AWS SDK for JavaScript v3 and
// verify the envelopes' signatures with sns-validator, AWS's message
// validator for Node.js.
//
// Usage: node sns_check.mjs ENDPOINT
//        node sns_check.mjs --probe   (exits 0 when the packages are installed)
//
// ENDPOINT is the server's https:// URL: the validator fetches the signing
// certificate over HTTPS only, so the caller serves TLS with a certificate
// that NODE_EXTRA_CA_CERTS makes Node trust. Credentials and region come
// from the environment, as the SDK reads them.
//
// The script creates a topic, subscribes two queues (one enveloped, one
// raw), publishes, and checks the envelope member by member and the raw
// copy; then it checks the signature (SignatureVersion 1 and 2) with the
// validator: refused as AWS's default host pattern refuses any host but
// sns.<region>.amazonaws.com, accepted once told to trust the server's
// host, and refused again for a message changed after signing. It exits 0
// when every check passed and 1 with a message naming the first mismatch.

import assert from "node:assert/strict";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
let sns, sqs, MessageValidator;
try {
  sns = await import("@aws-sdk/client-sns");
  sqs = await import("@aws-sdk/client-sqs");
  MessageValidator = require("sns-validator");
} catch (err) {
  console.error(`@aws-sdk/client-sns, @aws-sdk/client-sqs or sns-validator is not installed (npm ci in e2e/testdata/js): ${err.message}`);
  process.exit(2);
}
if (process.argv[2] === "--probe") {
  process.exit(0);
}
const endpoint = process.argv[2];
if (!endpoint?.startsWith("https://")) {
  console.error("usage: node sns_check.mjs https://HOST:PORT");
  process.exit(2);
}

const snsClient = new sns.SNSClient({ endpoint, region: "us-east-1", maxAttempts: 1 });
const sqsClient = new sqs.SQSClient({ endpoint, region: "us-east-1", maxAttempts: 1 });
const suffix = `${process.pid}-${Date.now()}`;

// receiveOne receives the one message a queue holds.
async function receiveOne(url) {
  const out = await sqsClient.send(new sqs.ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, MessageAttributeNames: ["All"] }));
  assert.equal(out.Messages?.length, 1, `messages in ${url}`);
  return out.Messages[0];
}

// queue creates a queue and returns its URL and ARN.
async function queue(name) {
  const url = (await sqsClient.send(new sqs.CreateQueueCommand({ QueueName: name }))).QueueUrl;
  const attrs = await sqsClient.send(new sqs.GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["QueueArn"] }));
  return { url, arn: attrs.Attributes.QueueArn };
}

// validate runs the validator on an envelope and returns the error, or null.
const validate = (validator, envelope) =>
  new Promise((resolve) => validator.validate(envelope, (err) => resolve(err ?? null)));

const host = new URL(endpoint).host;
const escaped = host.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const trusting = new MessageValidator(new RegExp(`^${escaped}$`));
let account;

for (const version of ["1", "2"]) {
  const name = `js-topic-v${version}-${suffix}`;
  const topic = (await snsClient.send(new sns.CreateTopicCommand({ Name: name, Attributes: { SignatureVersion: version } }))).TopicArn;
  assert.match(topic, new RegExp(`^arn:aws:sns:us-east-1:\\d{12}:${name}$`), "TopicArn");
  account = topic.split(":")[4];
  const listed = await snsClient.send(new sns.ListTopicsCommand({}));
  assert.ok(listed.Topics.some((t) => t.TopicArn === topic), "ListTopics lists the topic");

  const env = await queue(`js-env-v${version}-${suffix}`);
  const raw = await queue(`js-raw-v${version}-${suffix}`);
  const envSub = (await snsClient.send(new sns.SubscribeCommand({ TopicArn: topic, Protocol: "sqs", Endpoint: env.arn }))).SubscriptionArn;
  const rawSub = (await snsClient.send(new sns.SubscribeCommand({
    TopicArn: topic, Protocol: "sqs", Endpoint: raw.arn, Attributes: { RawMessageDelivery: "true" }, ReturnSubscriptionArn: true,
  }))).SubscriptionArn;
  const subs = (await snsClient.send(new sns.ListSubscriptionsByTopicCommand({ TopicArn: topic }))).Subscriptions;
  assert.deepEqual(subs.map((s) => s.SubscriptionArn).sort(), [envSub, rawSub].sort(), "ListSubscriptionsByTopic");

  const message = `{"order": 7, "note": "café </tag> & more"}`;
  const published = await snsClient.send(new sns.PublishCommand({
    TopicArn: topic, Message: message, Subject: "New order",
    MessageAttributes: { kind: { DataType: "String", StringValue: "refund" }, amount: { DataType: "Number", StringValue: "12.5" } },
  }));

  const copy = await receiveOne(raw.url);
  assert.equal(copy.Body, message, "the raw copy's body");
  assert.equal(copy.MessageAttributes.kind.StringValue, "refund", "the raw copy's String attribute");
  assert.equal(copy.MessageAttributes.amount.DataType, "Number", "the raw copy's Number attribute");

  const body = (await receiveOne(env.url)).Body;
  const envelope = JSON.parse(body);
  assert.deepEqual(Object.keys(envelope), ["Type", "MessageId", "TopicArn", "Subject", "Message", "Timestamp", "SignatureVersion",
    "Signature", "SigningCertURL", "UnsubscribeURL", "MessageAttributes"], "the envelope's members, in AWS's order");
  assert.equal(envelope.Type, "Notification");
  assert.equal(envelope.MessageId, published.MessageId, "MessageId is Publish's");
  assert.equal(envelope.TopicArn, topic);
  assert.equal(envelope.Subject, "New order");
  assert.equal(envelope.Message, message);
  assert.match(envelope.Timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, "Timestamp");
  assert.equal(envelope.SignatureVersion, version);
  assert.match(envelope.SigningCertURL, new RegExp(`^${endpoint}/SimpleNotificationService-[0-9a-f]{32}\\.pem$`), "SigningCertURL");
  assert.equal(envelope.UnsubscribeURL, `${endpoint}/?Action=Unsubscribe&SubscriptionArn=${envSub}`, "UnsubscribeURL");
  assert.deepEqual(envelope.MessageAttributes, {
    kind: { Type: "String", Value: "refund" }, amount: { Type: "Number", Value: "12.5" },
  }, "MessageAttributes");

  // AWS's validator trusts only certificates of sns.<region>.amazonaws.com
  // by default: Baton's host is refused before any signature is checked.
  const refused = await validate(new MessageValidator(), body);
  assert.equal(refused?.message, "The certificate is located on an invalid domain.", "the default host pattern refuses the server's host");
  // Told to trust the server's host, it fetches the certificate over HTTPS
  // and verifies the signature.
  assert.equal(await validate(trusting, body), null, `SignatureVersion ${version} verifies`);
  const forged = await validate(trusting, { ...envelope, Message: message + " " });
  assert.equal(forged?.message, "The message signature is invalid.", "a changed message is refused");

  await snsClient.send(new sns.UnsubscribeCommand({ SubscriptionArn: rawSub }));
  await snsClient.send(new sns.DeleteTopicCommand({ TopicArn: topic }));
}

try {
  await snsClient.send(new sns.PublishCommand({ TopicArn: `arn:aws:sns:us-east-1:${account}:js-none-${suffix}`, Message: "m" }));
  assert.fail("Publish to a missing topic succeeded");
} catch (err) {
  assert.ok(err instanceof sns.NotFoundException, `Publish to a missing topic: got ${err.name}, want NotFoundException`);
  assert.equal(err.$metadata.httpStatusCode, 404, "NotFound's status");
}
console.log("JavaScript SDK SNS: every check passed (sns-validator verified SignatureVersion 1 and 2)");
