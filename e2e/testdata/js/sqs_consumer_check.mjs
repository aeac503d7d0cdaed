// Consume a Baton queue with sqs-consumer (the npm package, pinned in
// package-lock.json) and check what it did.
//
// Usage: node sqs_consumer_check.mjs ENDPOINT
//        node sqs_consumer_check.mjs --probe   (exits 0 when it is installed)
//
// Three messages are sent with the AWS SDK for JavaScript v3; the consumer's
// handler takes them, failing once on one of them. sqs-consumer must then
// report that failure as a processing_error, make the message visible again
// at once (terminateVisibilityTimeout), hand it over a second time, and
// delete every message its handler took: the queue ends empty. Exits 0 when
// every check passed, 1 naming the first mismatch, within 60 s.

import assert from "node:assert/strict";

const loaded = await Promise.all([import("@aws-sdk/client-sqs"), import("sqs-consumer")]).catch((err) => {
  console.error(`sqs-consumer is not installed (npm ci in e2e/testdata/js): ${err.message}`);
  process.exit(2);
});
if (process.argv[2] === "--probe") {
  process.exit(0);
}
const [{ SQSClient, CreateQueueCommand, SendMessageBatchCommand, GetQueueAttributesCommand }, { Consumer }] = loaded;

const endpoint = process.argv[2];
const sqs = new SQSClient({ endpoint, region: "us-east-1", maxAttempts: 1 });
const deadline = setTimeout(() => {
  console.error("sqs-consumer check: no result within 60 s");
  process.exit(1);
}, 60_000);

const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: "sqs-consumer-check" }));
await sqs.send(new SendMessageBatchCommand({
  QueueUrl,
  Entries: ["first", "second", "third"].map((body, i) => ({ Id: `m${i}`, MessageBody: body })),
}));

const handled = [];
const errors = [];
let failed = false;
const done = new Promise((resolve) => {
  const consumer = Consumer.create({
    queueUrl: QueueUrl,
    sqs,
    batchSize: 10,
    waitTimeSeconds: 1,
    terminateVisibilityTimeout: true,
    handleMessage: async (message) => {
      if (message.Body === "second" && !failed) {
        failed = true;
        throw new Error("fail once");
      }
      handled.push(message.Body);
      if (handled.length === 3) {
        consumer.stop({ abort: false });
      }
      return message;
    },
  });
  consumer.on("processing_error", (err) => errors.push(err.message));
  consumer.on("error", (err) => {
    console.error(`sqs-consumer error: ${err.message}`);
    process.exit(1);
  });
  consumer.on("stopped", resolve);
  consumer.start();
});
await done;

assert.deepEqual([...handled].sort(), ["first", "second", "third"], "the handler took each message once it succeeded");
assert.equal(errors.length, 1, `one processing_error, got ${JSON.stringify(errors)}`);
assert.match(errors[0], /fail once/);

// Deleted: poll until the queue reports nothing visible or in flight.
for (let i = 0; ; i++) {
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({
    QueueUrl,
    AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
  }));
  if (Attributes.ApproximateNumberOfMessages === "0" && Attributes.ApproximateNumberOfMessagesNotVisible === "0") {
    break;
  }
  assert.ok(i < 100, `the queue still holds messages: ${JSON.stringify(Attributes)}`);
  await new Promise((r) => setTimeout(r, 100));
}
clearTimeout(deadline);
console.log(`sqs-consumer: handled ${handled.join(", ")}; one failure redelivered; queue empty`);
