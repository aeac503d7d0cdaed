package cli

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// yamlLine finds the line in yaml.v3's syntax errors ("yaml: line 3: …").
var yamlLine = regexp.MustCompile(`^yaml: line ([0-9]+): (.*)$`)

// syntaxError formats a YAML syntax error in data as file:line: reason.
//
// The line yaml.v3 reports is not always the problem's: for a parser error
// it is the line where the construct being parsed began (the block mapping
// an ill-indented key breaks, lines above it), for some errors there is
// none ("unknown anchor"), and it numbers the lines of its scanner's errors
// from 1 but those of its parser's from 0, leaving the number out for line
// 0. So the line is found by cutting the file: the first line at whose end
// the parser already fails with the same reason. Only for a file too long
// to cut line by line is the reported line taken, corrected as below (the
// parser's problems are a fixed set: the package is frozen).
func (p *configParser) syntaxError(data []byte, err error) error {
	msg, line := yamlProblem(err)
	if at := firstFailingLine(data, msg); at > 0 {
		return fmt.Errorf("%s:%d: %s", p.path, at, msg)
	}
	for _, problem := range yamlParserProblems {
		if strings.HasPrefix(msg, problem) {
			line++
			break
		}
	}
	return fmt.Errorf("%s:%d: %s", p.path, max(line, 1), msg)
}

// yamlProblem splits a yaml.v3 error into its reason and the line it
// names (0 if none).
func yamlProblem(err error) (msg string, line int) {
	msg = strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	return msg, line
}

// maxCutLines bounds the file firstFailingLine cuts: each cut parses the
// lines above it again.
const maxCutLines = 2000

// firstFailingLine is the 1-based number of the first line of data at
// whose end the YAML parser fails with msg, or 0.
func firstFailingLine(data []byte, msg string) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > maxCutLines {
		return 0
	}
	end := 0
	for i, l := range lines {
		end += len(l)
		dec := yaml.NewDecoder(bytes.NewReader(data[:end]))
		for {
			var n yaml.Node
			err := dec.Decode(&n)
			if err == nil {
				continue
			}
			if m, _ := yamlProblem(err); m == msg {
				return i + 1
			}
			break
		}
	}
	return 0
}

// yamlParserProblems are the messages of yaml.v3's parser (parserc.go), as
// opposed to its scanner's.
var yamlParserProblems = []string{
	"did not find expected ',' or ']'", "did not find expected ',' or '}'", "did not find expected '-' indicator",
	"did not find expected <document start>", "did not find expected <stream-start>", "did not find expected key",
	"did not find expected node content", "found duplicate %TAG directive", "found duplicate %YAML directive",
	"found incompatible YAML document", "found undefined tag handle",
}
