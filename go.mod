module github.com/baton-sqs/baton

go 1.26.8

require (
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.1.0
)

require github.com/inconshreveable/mousetrap v1.1.0 // indirect
