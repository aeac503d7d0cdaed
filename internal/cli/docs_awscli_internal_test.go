package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The AWS CLI v1 sends every `aws sqs` command of a region it knows to
// https://queue.amazonaws.com (https://<region>.queue.amazonaws.com) unless
// --endpoint-url is given on the command line: its sslCommonName override
// (awscli/customizations/overridesslcommonname.py) ignores AWS_ENDPOINT_URL,
// AWS_ENDPOINT_URL_SQS and a profile's endpoint_url. A shown `aws … sqs …` without --endpoint-url therefore talks to
// Amazon SQS, not to Baton: with real credentials in the environment, to a
// real account. This check finds such command lines in the docs, the
// deploy files and the migration examples.

// awsSQSCommand matches a command line that runs the AWS CLI's sqs
// commands: `aws`, then any global options, then `sqs`.
var awsSQSCommand = regexp.MustCompile(`(^|[\s;&|(` + "`" + `])aws(\s+--?[A-Za-z][\w-]*(=\S+|\s+[^-\s]\S*)?)*\s+sqs(\s|$)`)

// sqsWithoutEndpoint lists, in text (a file's contents), the logical lines
// (backslash continuations joined) that run `aws … sqs …` without
// --endpoint-url; in a Markdown file only its code blocks count, as its
// prose names commands without running them.
func sqsWithoutEndpoint(text string, markdown bool) []string {
	var found []string
	inCode := !markdown
	logical := ""
	for line := range strings.SplitSeq(text, "\n") {
		if markdown && fence.MatchString(line) {
			inCode = !inCode
			continue
		}
		if !inCode {
			continue
		}
		if cont, ok := strings.CutSuffix(strings.TrimRight(line, " \t"), "\\"); ok {
			logical += cont + " "
			continue
		}
		logical += line
		if awsSQSCommand.MatchString(logical) && !strings.Contains(logical, "--endpoint-url") {
			found = append(found, strings.TrimSpace(logical))
		}
		logical = ""
	}
	return found
}

func TestDocsAWSCLISQSNamesItsEndpoint(t *testing.T) {
	t.Parallel()
	files := docFiles(t)
	for _, dir := range []string{"deploy", filepath.Join("docs", "migrating")} {
		err := filepath.WalkDir(filepath.Join(docsRoot, dir), func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range sqsWithoutEndpoint(string(text), strings.HasSuffix(file, ".md")) {
			t.Errorf("%s: `%s`: the AWS CLI v1 sends `aws sqs` to Amazon SQS whatever AWS_ENDPOINT_URL says; give --endpoint-url", file, line)
		}
	}
}

// The check finds what it is there to find, and passes the forms the docs
// use.
func TestDocsAWSCLISQSCheckCatches(t *testing.T) {
	t.Parallel()
	md := "Prose may name `aws sqs list-queues`.\n\n```sh\n" +
		"AWS_ENDPOINT_URL=http://127.0.0.1:9324 aws sqs list-queues\n" +
		"aws --region eu-west-1 sqs create-queue \\\n  --queue-name jobs\n" +
		"aws --endpoint-url http://127.0.0.1:9324 sqs list-queues\n" +
		"aws sqs send-message \\\n  --endpoint-url http://127.0.0.1:9324 --queue-url q --message-body b\n" +
		"awslocal sqs list-queues\n" +
		"AWS_ENDPOINT_URL=http://127.0.0.1:9324 aws sns list-topics\n" +
		"```\n"
	want := []string{
		"AWS_ENDPOINT_URL=http://127.0.0.1:9324 aws sqs list-queues",
		"aws --region eu-west-1 sqs create-queue    --queue-name jobs",
	}
	if got := sqsWithoutEndpoint(md, true); !slices.Equal(got, want) {
		t.Errorf("found %q, want %q", got, want)
	}
	yaml := "#   AWS_ENDPOINT_URL=http://127.0.0.1:9324 aws sqs list-queues\n"
	if got := sqsWithoutEndpoint(yaml, false); len(got) != 1 {
		t.Errorf("in a YAML comment: found %q, want the one line", got)
	}
}
