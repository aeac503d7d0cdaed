// Drive a Baton server through the AWS SDK for JavaScript v3 and check every
// answer.
//
// Usage: node sqs_check.mjs ENDPOINT
//        node sqs_check.mjs --probe   (exits 0 when the SDK is installed)
//
// Credentials and region come from the environment (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY), as the SDK reads them.
//
// The SDK speaks AWS JSON 1.0 to SQS, checks the MD5 digests of sent and
// received bodies itself, and by default sends each queue's requests to the
// host of its QueueUrl, so the URLs the server builds are exercised too. The
// script runs a queue's life (create, attributes, tags, typed message
// attributes, receive, change visibility, the three batch calls, purge,
// delete), a FIFO queue, a dead-letter queue with a move task, and the
// error classes a JavaScript caller catches. It exits 0 when every check
// passed and 1 with a message naming the first mismatch.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";

const sdk = await import("@aws-sdk/client-sqs").catch((err) => {
  console.error(`@aws-sdk/client-sqs is not installed (npm ci in e2e/testdata/js): ${err.message}`);
  process.exit(2);
});
if (process.argv[2] === "--probe") {
  process.exit(0);
}
const {
  SQSClient,
  CreateQueueCommand,
  GetQueueUrlCommand,
  ListQueuesCommand,
  GetQueueAttributesCommand,
  SetQueueAttributesCommand,
  TagQueueCommand,
  UntagQueueCommand,
  ListQueueTagsCommand,
  SendMessageCommand,
  SendMessageBatchCommand,
  ReceiveMessageCommand,
  DeleteMessageCommand,
  DeleteMessageBatchCommand,
  ChangeMessageVisibilityCommand,
  ChangeMessageVisibilityBatchCommand,
  PurgeQueueCommand,
  DeleteQueueCommand,
  ListDeadLetterSourceQueuesCommand,
  StartMessageMoveTaskCommand,
  ListMessageMoveTasksCommand,
  QueueDoesNotExist,
  ReceiptHandleIsInvalid,
  BatchEntryIdsNotDistinct,
  InvalidAttributeName,
  EmptyBatchRequest,
} = sdk;

const endpoint = process.argv[2];
if (!endpoint) {
  console.error("usage: node sqs_check.mjs ENDPOINT");
  process.exit(2);
}

const sqs = new SQSClient({
  endpoint,
  region: "us-east-1",
  maxAttempts: 1,
});
let calls = 0;
const call = (command) => {
  calls++;
  return sqs.send(command);
};
// fails runs command, which must fail with an instance of errorClass and
// HTTP status (400 unless SQS's model gives another), and returns the error.
async function fails(command, errorClass, status = 400) {
  calls++;
  try {
    await sqs.send(command);
  } catch (err) {
    if (!(err instanceof errorClass)) {
      assert.fail(`${command.constructor.name}: got ${err.name} (${err.message}), want ${errorClass.name}`);
    }
    assert.equal(err.$fault, "client", `${command.constructor.name}: $fault`);
    assert.equal(err.$metadata.httpStatusCode, status, `${command.constructor.name}: HTTP status`);
    return err;
  }
  assert.fail(`${command.constructor.name} succeeded, want ${errorClass.name}`);
}
const md5 = (s) => createHash("md5").update(s, "utf8").digest("hex");
const suffix = `${process.pid}-${Date.now()}`;

// receive gathers n messages from url with short long polls; it fails after
// 15 s or on more than n.
async function receive(url, n, params = {}) {
  const got = [];
  const deadline = Date.now() + 15000;
  while (got.length < n && Date.now() < deadline) {
    const out = await call(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, ...params }));
    got.push(...(out.Messages ?? []));
  }
  assert.equal(got.length, n, `messages received from ${url}`);
  return got;
}

// --- A standard queue's life ---------------------------------------------
const name = `js-life-${suffix}`;
const created = await call(new CreateQueueCommand({
  QueueName: name,
  Attributes: { VisibilityTimeout: "45", MessageRetentionPeriod: "3600" },
  tags: { team: "payments" },
}));
const url = created.QueueUrl;
assert.ok(url.endsWith(`/${name}`), `QueueUrl ${url} ends with the name`);
assert.equal((await call(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl, url, "GetQueueUrl");

const listed = await call(new ListQueuesCommand({ QueueNamePrefix: `js-life-${suffix}` }));
assert.deepEqual(listed.QueueUrls, [url], "ListQueues by prefix");

const attrs = (await call(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["All"] }))).Attributes;
assert.equal(attrs.VisibilityTimeout, "45", "VisibilityTimeout");
assert.equal(attrs.MessageRetentionPeriod, "3600", "MessageRetentionPeriod");
assert.match(attrs.QueueArn, new RegExp(`^arn:aws:sqs:[a-z0-9-]+:\\d{12}:${name}$`), "QueueArn");
assert.equal(url.split("/").at(-2), attrs.QueueArn.split(":")[4], "QueueUrl and QueueArn name the same account");
await call(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { VisibilityTimeout: "30" } }));
const vt = (await call(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["VisibilityTimeout"] }))).Attributes;
assert.deepEqual(vt, { VisibilityTimeout: "30" }, "attributes after SetQueueAttributes");
await fails(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { NoSuchAttribute: "1" } }), InvalidAttributeName);

await call(new TagQueueCommand({ QueueUrl: url, Tags: { env: "test" } }));
await call(new UntagQueueCommand({ QueueUrl: url, TagKeys: ["team"] }));
assert.deepEqual((await call(new ListQueueTagsCommand({ QueueUrl: url }))).Tags, { env: "test" }, "tags");

// Typed message attributes: the digest is the one SQS documents for them
// (docs/sqs-behaviour.md §4.3), and binary values come back as bytes.
const typed = {
  ClientId: { DataType: "String", StringValue: "c-42" },
  Retries: { DataType: "Number.int", StringValue: "3" },
  Blob: { DataType: "Binary", BinaryValue: Uint8Array.from([0xde, 0xad, 0xbe, 0xef]) },
};
const body = "héllo from JavaScript ✓";
const sent = await call(new SendMessageCommand({
  QueueUrl: url,
  MessageBody: body,
  MessageAttributes: typed,
  MessageSystemAttributes: { AWSTraceHeader: { DataType: "String", StringValue: "Root=1-5759e988-bd862e3fe1be46a994272793" } },
}));
assert.equal(sent.MD5OfMessageBody, md5(body), "MD5OfMessageBody");
assert.equal(sent.MD5OfMessageAttributes, "489ec3752a0fbb1b289096f88629b322", "MD5OfMessageAttributes");
assert.ok(sent.MD5OfMessageSystemAttributes, "MD5OfMessageSystemAttributes present");

let [m] = await receive(url, 1, { MessageAttributeNames: ["All"], MessageSystemAttributeNames: ["All"], VisibilityTimeout: 60 });
assert.equal(m.MessageId, sent.MessageId, "received MessageId");
assert.equal(m.Body, body, "received body");
assert.equal(m.MD5OfMessageAttributes, sent.MD5OfMessageAttributes, "received MD5OfMessageAttributes");
assert.equal(m.MessageAttributes.ClientId.StringValue, "c-42");
assert.equal(m.MessageAttributes.Retries.DataType, "Number.int");
assert.deepEqual([...m.MessageAttributes.Blob.BinaryValue], [0xde, 0xad, 0xbe, 0xef], "binary attribute");
assert.equal(m.Attributes.ApproximateReceiveCount, "1");
assert.equal(m.Attributes.AWSTraceHeader, "Root=1-5759e988-bd862e3fe1be46a994272793");
assert.ok(Number(m.Attributes.SentTimestamp) > 1.6e12, "SentTimestamp in epoch milliseconds");

// Leased: not handed out again; released with a zero timeout (which this
// SDK sends, unlike some), it is, with its count raised.
const none = await call(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 0 }));
assert.equal(none.Messages, undefined, "a leased message is not received");
await call(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0 }));
[m] = await receive(url, 1, { MessageSystemAttributeNames: ["ApproximateReceiveCount"] });
assert.equal(m.Attributes.ApproximateReceiveCount, "2", "count after the release");
await call(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
await fails(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: "not-a-receipt-handle" }), ReceiptHandleIsInvalid, 404);

// Batches, with per-entry failures.
const batch = await call(new SendMessageBatchCommand({
  QueueUrl: url,
  Entries: ["a", "b", "c"].map((id) => ({ Id: id, MessageBody: `body ${id}` })),
}));
assert.deepEqual(batch.Successful.map((e) => e.Id).sort(), ["a", "b", "c"], "SendMessageBatch successes");
for (const e of batch.Successful) {
  assert.equal(e.MD5OfMessageBody, md5(`body ${e.Id}`), `batch entry ${e.Id} digest`);
}
await fails(new SendMessageBatchCommand({
  QueueUrl: url,
  Entries: [{ Id: "x", MessageBody: "1" }, { Id: "x", MessageBody: "2" }],
}), BatchEntryIdsNotDistinct);
await fails(new DeleteMessageBatchCommand({ QueueUrl: url, Entries: [] }), EmptyBatchRequest);

const three = await receive(url, 3, { VisibilityTimeout: 60 });
const vis = await call(new ChangeMessageVisibilityBatchCommand({
  QueueUrl: url,
  Entries: [
    { Id: "release", ReceiptHandle: three[0].ReceiptHandle, VisibilityTimeout: 0 },
    { Id: "bogus", ReceiptHandle: "not-a-receipt-handle", VisibilityTimeout: 10 },
  ],
}));
assert.deepEqual(vis.Successful.map((e) => e.Id), ["release"], "ChangeMessageVisibilityBatch successes");
assert.deepEqual(vis.Failed.map((e) => [e.Id, e.Code, e.SenderFault]), [["bogus", "ReceiptHandleIsInvalid", true]]);
const again = await receive(url, 1);
const del = await call(new DeleteMessageBatchCommand({
  QueueUrl: url,
  Entries: [
    { Id: "one", ReceiptHandle: again[0].ReceiptHandle },
    { Id: "two", ReceiptHandle: three[1].ReceiptHandle },
    { Id: "three", ReceiptHandle: three[2].ReceiptHandle },
    { Id: "bogus", ReceiptHandle: "not-a-receipt-handle" },
  ],
}));
assert.deepEqual(del.Successful.map((e) => e.Id).sort(), ["one", "three", "two"], "DeleteMessageBatch successes");
assert.deepEqual(del.Failed.map((e) => [e.Id, e.Code]), [["bogus", "ReceiptHandleIsInvalid"]]);

// A long poll on the empty queue waits its time and answers empty.
const t0 = Date.now();
const empty = await call(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 1 }));
assert.equal(empty.Messages, undefined, "long poll on an empty queue");
assert.ok(Date.now() - t0 >= 900, `long poll answered after ${Date.now() - t0} ms, want about 1 s`);

await call(new SendMessageCommand({ QueueUrl: url, MessageBody: "purged" }));
await call(new PurgeQueueCommand({ QueueUrl: url }));
const afterPurge = await call(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 0 }));
assert.equal(afterPurge.Messages, undefined, "receive after PurgeQueue");
await call(new DeleteQueueCommand({ QueueUrl: url }));
const gone = await fails(new GetQueueUrlCommand({ QueueName: name }), QueueDoesNotExist);
// The Query-protocol code, which SDKs of that era match on, rides along.
assert.equal(gone.Code, "AWS.SimpleQueueService.NonExistentQueue", "query-compatible error code");

// --- FIFO -----------------------------------------------------------------
const fifo = (await call(new CreateQueueCommand({
  QueueName: `js-fifo-${suffix}.fifo`,
  Attributes: { FifoQueue: "true", ContentBasedDeduplication: "true" },
}))).QueueUrl;
const firsts = [];
for (const b of ["first", "second", "third"]) {
  firsts.push(await call(new SendMessageCommand({ QueueUrl: fifo, MessageBody: b, MessageGroupId: "g" })));
}
const dup = await call(new SendMessageCommand({ QueueUrl: fifo, MessageBody: "first", MessageGroupId: "g" }));
assert.equal(dup.MessageId, firsts[0].MessageId, "a duplicate answers the original MessageId");
assert.ok(BigInt(firsts[0].SequenceNumber) < BigInt(firsts[1].SequenceNumber), "sequence numbers increase");
const ordered = await receive(fifo, 3, { MessageSystemAttributeNames: ["MessageGroupId", "SequenceNumber"] });
assert.deepEqual(ordered.map((x) => x.Body), ["first", "second", "third"], "FIFO order");
assert.equal(ordered[0].Attributes.MessageGroupId, "g");
await call(new DeleteQueueCommand({ QueueUrl: fifo }));

// --- Dead letters and a move task ---------------------------------------
const dlq = (await call(new CreateQueueCommand({ QueueName: `js-dlq-${suffix}` }))).QueueUrl;
const dlqArn = (await call(new GetQueueAttributesCommand({ QueueUrl: dlq, AttributeNames: ["QueueArn"] }))).Attributes.QueueArn;
const src = (await call(new CreateQueueCommand({
  QueueName: `js-src-${suffix}`,
  Attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 1 }) },
}))).QueueUrl;
const srcArn = (await call(new GetQueueAttributesCommand({ QueueUrl: src, AttributeNames: ["QueueArn"] }))).Attributes.QueueArn;
await call(new SendMessageCommand({ QueueUrl: src, MessageBody: "poison" }));
await receive(src, 1, { VisibilityTimeout: 0 });
const second = await call(new ReceiveMessageCommand({ QueueUrl: src, WaitTimeSeconds: 0 }));
assert.equal(second.Messages, undefined, "the second receive dead-letters the message");
const [dead] = await receive(dlq, 1, { MessageSystemAttributeNames: ["DeadLetterQueueSourceArn"], VisibilityTimeout: 0 });
assert.equal(dead.Body, "poison");
assert.equal(dead.Attributes.DeadLetterQueueSourceArn, srcArn, "DeadLetterQueueSourceArn");
assert.deepEqual((await call(new ListDeadLetterSourceQueuesCommand({ QueueUrl: dlq }))).queueUrls, [src], "ListDeadLetterSourceQueues");

const task = await call(new StartMessageMoveTaskCommand({ SourceArn: dlqArn }));
assert.ok(task.TaskHandle, "StartMessageMoveTask gives a handle");
let status;
for (const deadline = Date.now() + 10000; Date.now() < deadline;) {
  const [t] = (await call(new ListMessageMoveTasksCommand({ SourceArn: dlqArn }))).Results;
  status = t.Status;
  if (status === "COMPLETED") {
    assert.equal(t.ApproximateNumberOfMessagesMoved, 1, "messages moved");
    break;
  }
  await new Promise((r) => setTimeout(r, 100));
}
assert.equal(status, "COMPLETED", "move task status");
const [back] = await receive(src, 1);
assert.equal(back.Body, "poison", "the moved message is back in its source");
await call(new DeleteQueueCommand({ QueueUrl: src }));
await call(new DeleteQueueCommand({ QueueUrl: dlq }));

console.log(`ok: ${calls} calls through @aws-sdk/client-sqs checked`);
