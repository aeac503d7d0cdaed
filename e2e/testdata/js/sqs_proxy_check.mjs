// Drive `baton proxy` through the AWS SDK for JavaScript v3 as an
// application is pointed at it: by AWS_ENDPOINT_URL_SQS, with no endpoint
// of the client's own. Such a client sends each queue's requests to the
// host of its QueueUrl (the SDK's useQueueUrlAsEndpoint, on by default), so
// every queue URL the proxy hands out must name the proxy, or the client
// goes around it after its first call.
//
// Usage: node sqs_proxy_check.mjs QUEUE-NAME
//        node sqs_proxy_check.mjs --probe   (exits 0 when the SDK is installed)
//
// Endpoint, credentials and region come from the environment
// (AWS_ENDPOINT_URL_SQS, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_DEFAULT_REGION). It creates QUEUE-NAME and QUEUE-NAME-dlq, checks
// that every queue URL handed out starts with AWS_ENDPOINT_URL_SQS, and
// runs a message's life by those URLs: send, a batch send, receive,
// change visibility, delete, a batch delete. It exits 0 when every check
// passed and 1 with a message naming the first mismatch.

import assert from "node:assert/strict";

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
  ListDeadLetterSourceQueuesCommand,
  GetQueueAttributesCommand,
  SendMessageCommand,
  SendMessageBatchCommand,
  ReceiveMessageCommand,
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  DeleteMessageBatchCommand,
} = sdk;

const name = process.argv[2];
const proxy = process.env.AWS_ENDPOINT_URL_SQS;
if (!name || !proxy) {
  console.error("usage: AWS_ENDPOINT_URL_SQS=PROXY node sqs_proxy_check.mjs QUEUE-NAME");
  process.exit(2);
}
// No endpoint here: the SDK takes AWS_ENDPOINT_URL_SQS, and a queue's
// requests go to its QueueUrl's host.
const sqs = new SQSClient({ maxAttempts: 1 });
const onProxy = (url, what) =>
  assert.ok(url.startsWith(`${proxy}/`), `${what}: queue URL ${url} does not name the proxy ${proxy}`);

const dlq = (await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }))).QueueUrl;
onProxy(dlq, "CreateQueue");
const dlqArn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq, AttributeNames: ["QueueArn"] }))).Attributes.QueueArn;
const url = (await sqs.send(new CreateQueueCommand({
  QueueName: name,
  Attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 5 }) },
}))).QueueUrl;
onProxy(url, "CreateQueue");
assert.equal((await sqs.send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl, url, "GetQueueUrl");
const listed = (await sqs.send(new ListQueuesCommand({ QueueNamePrefix: name }))).QueueUrls ?? [];
assert.deepEqual([...listed].sort(), [url, dlq].sort(), "ListQueues");
const sources = (await sqs.send(new ListDeadLetterSourceQueuesCommand({ QueueUrl: dlq }))).queueUrls ?? [];
assert.deepEqual(sources, [url], "ListDeadLetterSourceQueues");

await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "one" }));
await sqs.send(new SendMessageBatchCommand({
  QueueUrl: url,
  Entries: [{ Id: "a", MessageBody: "two" }, { Id: "b", MessageBody: "three" }],
}));
const got = [];
for (const deadline = Date.now() + 15000; got.length < 3 && Date.now() < deadline;) {
  const out = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
  got.push(...(out.Messages ?? []));
}
assert.equal(got.length, 3, "messages received");
await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: got[0].ReceiptHandle, VisibilityTimeout: 60 }));
await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: got[0].ReceiptHandle }));
const deleted = await sqs.send(new DeleteMessageBatchCommand({
  QueueUrl: url,
  Entries: got.slice(1).map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })),
}));
assert.equal(deleted.Successful?.length, 2, `DeleteMessageBatch: ${JSON.stringify(deleted.Failed)}`);
console.log(`the queue's life through the proxy at ${proxy}: ok`);
