module github.com/baton-sqs/baton/e2e/testdata/gov1

go 1.26

require github.com/aws/aws-sdk-go v1.55.8

require github.com/jmespath/go-jmespath v0.4.0 // indirect
