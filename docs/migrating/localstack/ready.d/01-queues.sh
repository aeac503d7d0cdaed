#!/bin/bash
# A LocalStack init hook, as it would sit in /etc/localstack/init/ready.d:
# it creates the queues the application expects.
set -euo pipefail

awslocal sqs create-queue --queue-name orders-dlq
awslocal sqs create-queue --queue-name orders \
  --attributes '{"VisibilityTimeout":"45","RedrivePolicy":"{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:000000000000:orders-dlq\",\"maxReceiveCount\":\"3\"}"}'
awslocal sqs create-queue --queue-name events.fifo \
  --attributes FifoQueue=true,ContentBasedDeduplication=true
echo "queues ready"
