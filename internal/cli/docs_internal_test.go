package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The docs check: every `baton …` command line README.md and docs/*.md
// show, in a code block or inline code, names a command of the CLI and only
// flags that command has; and every relative link between the docs leads to
// a file that exists (and, for a link to a heading, to that heading). It
// reads the CLI's own command table (Main.root), so a flag renamed or
// removed in the code fails here until the docs follow.

// docsRoot is the repository's root directory, seen from this package's.
var docsRoot = filepath.Join("..", "..")

// docFiles lists README.md and docs/*.md, relative to docsRoot.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(docsRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(docsRoot, "README.md")}, files...)
	if len(files) < 3 {
		t.Fatalf("found %v: want README.md and the docs", files)
	}
	return files
}

// doc is a file of docFiles and its text.
type doc struct {
	file string
	text []byte
}

// readDocs reads the files of docFiles.
func readDocs(t *testing.T) []doc {
	t.Helper()
	var out []doc
	for _, file := range docFiles(t) {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, doc{file, text})
	}
	return out
}

func TestDocsCommandsExist(t *testing.T) {
	t.Parallel()
	root := docsCheckRoot()
	checked := 0
	for _, d := range readDocs(t) {
		file, text := d.file, d.text
		if n := len(fence.FindAllString(string(text), -1)); n%2 != 0 {
			t.Errorf("%s: %d code fences: one is not closed", file, n)
		}
		for _, c := range shownCommands(string(text)) {
			checked++
			for _, p := range checkCommandLine(root, c.text) {
				t.Errorf("%s:%d: `%s`: %s", file, c.line, c.text, p)
			}
		}
	}
	t.Logf("checked %d command lines", checked)
	// The README alone shows dozens: far fewer means the extraction broke.
	if checked < 30 {
		t.Errorf("checked %d command lines in the docs: the extraction missed them", checked)
	}
}

func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	checked := 0
	for _, d := range readDocs(t) {
		file, text := d.file, d.text
		for _, l := range relativeLinks(string(text)) {
			checked++
			if p := checkLink(file, l.target); p != "" {
				t.Errorf("%s:%d: link %s: %s", file, l.line, l.target, p)
			}
		}
	}
	t.Logf("checked %d links", checked)
	if checked < 10 {
		t.Errorf("checked %d links in the docs: the extraction missed them", checked)
	}
}

// A doc refers its reader to nothing the reader cannot see: no issue of
// the project's tracker ("the issue's closing note", "issue #12").
func TestDocsNameNoIssue(t *testing.T) {
	t.Parallel()
	for _, d := range readDocs(t) {
		file, text := d.file, d.text
		for _, r := range issueReferences(string(text)) {
			t.Errorf("%s:%d: %q: a reader of the docs cannot see the project's issues: say what the doc means instead", file, r.line, r.text)
		}
	}
	for sample, want := range map[string]int{
		"Figures from one run are in the issue's closing note.": 1,
		"As issue #12 found, and the issue says,":               2,
		"every receive issues a new opaque handle":              0,
		"See [the issues](https://github.com/x/y/issues).":      0,
	} {
		if got := len(issueReferences(sample)); got != want {
			t.Errorf("%q: %d references to an issue found, want %d", sample, got, want)
		}
	}
}

// issueRef is a phrase pointing at an issue of a tracker.
var issueRef = regexp.MustCompile(`(?i)\b(?:the|this|that|our|an)\s+issue(?:'s)?\b|\bissue\s*#\d+`)

// issueReferences lists the phrases of text that point at an issue.
func issueReferences(text string) []shown {
	var out []shown
	for _, m := range issueRef.FindAllStringIndex(text, -1) {
		out = append(out, shown{text: text[m[0]:m[1]], line: strings.Count(text[:m[0]], "\n") + 1})
	}
	return out
}

// The check fails on what it is there to catch: a made-up command,
// subcommand, flag or shorthand, a broken link and a missing heading; and
// passes the forms the docs use.
func TestDocsCheckCatches(t *testing.T) {
	t.Parallel()
	root := docsCheckRoot()
	for _, tt := range []struct {
		line string
		want string // "" for no problem
	}{
		{"baton send jobs --no-such-flag", `unknown flag --no-such-flag for "baton send"`},
		{"baton frobnicate jobs", `unknown command "frobnicate" for "baton"`},
		{"baton queue frob jobs", `unknown command "frob" for "baton queue"`},
		{"baton send jobs -z", `unknown flag -z for "baton send"`},
		{"./baton serve --lisen 127.0.0.1:9324", `unknown flag --lisen for "baton serve"`},
		{"go run ./cmd/baton serve --store=memory --nope", `unknown flag --nope for "baton serve"`},
		{"BATON_ENDPOINT=x baton receive jobs --delte", `unknown flag --delte for "baton receive"`},
		{"baton receive jobs --count 10 --wait 20 --json | jq -r '.Messages[].Body'", ""},
		{"echo '{}' | baton send jobs -a Kind=String:order --endpoint http://127.0.0.1:9324", ""},
		{"baton peek QUEUE [-n N] [--state visible/inflight/delayed] [--oldest]", ""},
		{"baton completion bash/zsh/fish/powershell", ""},
		{"baton store salvage --data-dir ./d --to ./e   # a comment --not-a-flag", ""},
		{"baton queue create orders.fifo -t team=billing", ""},
		{"baton --version", ""},
		{"baton serve --help", ""},
		{"docker build -t baton --build-arg VERSION=1 .", ""},
	} {
		got := checkCommandLine(root, tt.line)
		switch {
		case tt.want == "" && len(got) > 0:
			t.Errorf("`%s`: %q, want no problem", tt.line, got)
		case tt.want != "" && !slices.Contains(got, tt.want):
			t.Errorf("`%s`: %q, want %q", tt.line, got, tt.want)
		}
	}

	md := "Run `baton send jobs --bogus`, then\n\n```sh\n./baton receive jobs \\\n  --wait 20 --nosuch\n```\n" +
		"```yaml\ncommand: baton --in-yaml\n```\n```text\nbaton (root package)\ncmd/baton  main\n```\n"
	var found []string
	for _, c := range shownCommands(md) {
		for _, p := range checkCommandLine(root, c.text) {
			found = append(found, fmt.Sprintf("%d: %s", c.line, p))
		}
	}
	want := []string{`1: unknown flag --bogus for "baton send"`, `4: unknown flag --nosuch for "baton receive"`}
	if !slices.Equal(found, want) {
		t.Errorf("problems in the sample: %q, want %q", found, want)
	}

	dir := t.TempDir()
	from := filepath.Join(dir, "README.md")
	for name, text := range map[string]string{"a.md": "# A title\n\n## Two words, here\n", "README.md": "# Readme\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for target, want := range map[string]string{
		"a.md":                  "",
		"a.md#two-words-here":   "",
		"a.md#a-title":          "",
		"missing.md":            "no such file",
		"a.md#no-such-heading":  `no heading "no-such-heading" in`,
		"#two-words-here":       `no heading "two-words-here" in`,
		"#readme":               "",
		"https://example.com/x": "",
	} {
		if got := checkLink(from, target); want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("link %s: %q, want %q", target, got, want)
		}
	}
	links := relativeLinks("See [a](a.md), [web](https://x.y/) and `[not](a link)`.\n\n```\n[nor](this.md)\n```\n[ref]: other.md\n  [observed]: a note, no link\n")
	var targets []string
	for _, l := range links {
		targets = append(targets, l.target)
	}
	if !slices.Equal(targets, []string{"a.md", "other.md"}) {
		t.Errorf("links found: %q, want a.md and other.md", targets)
	}
}

// docsCheckRoot is the CLI's command tree with what cobra adds at run time
// (help, completion, --version) added now.
func docsCheckRoot() *cobra.Command {
	root := Main{Stdout: io.Discard, Stderr: io.Discard}.root()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()
	var addHelp func(c *cobra.Command)
	addHelp = func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		for _, sub := range c.Commands() {
			addHelp(sub)
		}
	}
	addHelp(root)
	return root
}

// shown is a command line a doc shows, at a line of the file.
type shown struct {
	text string
	line int
}

// fence opens or closes a fenced code block.
var fence = regexp.MustCompile("(?m)^\\s*(```|~~~)")

// inlineCode is a code span of text (which may run over line ends).
var inlineCode = regexp.MustCompile("`([^`]+)`")

// shellBlocks are the info strings of the code blocks that hold commands;
// a block in another language (yaml, go, text) is not read.
var shellBlocks = []string{"", "sh", "bash", "shell", "console", "zsh"}

// shownCommands returns the command lines of markdown text that run baton:
// each line of a shell code block (a line ending in a backslash joined to
// the next) and each inline code span.
func shownCommands(text string) []shown {
	var out []shown
	lines := strings.Split(text, "\n")
	var prose strings.Builder // text outside the blocks, blank inside them
	inBlock, shell := false, false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if fence.MatchString(l) {
			inBlock = !inBlock
			lang := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "`~"))
			shell = slices.Contains(shellBlocks, lang)
			prose.WriteString("\n")
			continue
		}
		if !inBlock {
			prose.WriteString(l + "\n")
			continue
		}
		if !shell {
			prose.WriteString("\n")
			continue
		}
		start := i
		for strings.HasSuffix(l, "\\") && i+1 < len(lines) && !fence.MatchString(lines[i+1]) {
			i++
			l = strings.TrimSuffix(l, "\\") + " " + lines[i]
			prose.WriteString("\n")
		}
		prose.WriteString("\n")
		if runsBaton(l) {
			out = append(out, shown{text: strings.TrimSpace(l), line: start + 1})
		}
	}
	p := prose.String()
	for _, m := range inlineCode.FindAllStringSubmatchIndex(p, -1) {
		code := strings.Join(strings.Fields(p[m[2]:m[3]]), " ")
		if runsBaton(code) {
			out = append(out, shown{text: code, line: strings.Count(p[:m[0]], "\n") + 1})
		}
	}
	slices.SortStableFunc(out, func(a, b shown) int { return a.line - b.line })
	return out
}

// runsBaton says whether a command line has a segment that runs baton.
func runsBaton(line string) bool {
	for _, seg := range segments(line) {
		if _, ok := batonArgs(seg); ok {
			return true
		}
	}
	return false
}

// segmentBreak separates the commands of a shell line: pipes, lists,
// and command substitutions.
var segmentBreak = regexp.MustCompile(`\|\||&&|[|;&]|\$\(|<\(`)

// segments splits a shell line into its commands, without its comment. A
// table cell's escaped \| separates alternatives (visible\|inflight), so it
// becomes a slash.
func segments(line string) []string {
	line = strings.ReplaceAll(line, `\|`, "/")
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	if strings.HasPrefix(strings.TrimSpace(line), "#") {
		return nil
	}
	return segmentBreak.Split(line, -1)
}

// envAssignment is a VAR=value word before a command.
var envAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// batonArgs returns the words after the program when seg runs baton: as
// baton, a path to it (./baton, /usr/local/bin/baton), or go run
// ./cmd/baton, after any VAR=value words and sudo or exec.
func batonArgs(seg string) ([]string, bool) {
	words := strings.Fields(seg)
	for len(words) > 0 && (envAssignment.MatchString(words[0]) || words[0] == "sudo" || words[0] == "exec") {
		words = words[1:]
	}
	switch {
	case len(words) == 0:
		return nil, false
	case words[0] == "baton" || strings.HasSuffix(words[0], "/baton") && (strings.HasPrefix(words[0], ".") || strings.HasPrefix(words[0], "/")):
		return words[1:], true
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && strings.TrimSuffix(words[2], "/") == "./cmd/baton":
		return words[3:], true
	}
	return nil, false
}

// checkCommandLine returns what is wrong with the baton commands of a shell
// line: a command or subcommand the CLI does not have, or a flag the command
// named does not take.
func checkCommandLine(root *cobra.Command, line string) []string {
	var problems []string
	for _, seg := range segments(line) {
		if args, ok := batonArgs(seg); ok {
			problems = append(problems, checkArgs(root, args)...)
		}
	}
	return problems
}

// checkArgs walks args down root's subcommands and checks each flag against
// the command reached.
func checkArgs(root *cobra.Command, args []string) []string {
	var problems []string
	cmd, positional := root, false
	for i := 0; i < len(args); i++ {
		w := strings.Trim(args[i], "[](){},…'\"")
		switch {
		case w == "" || w == "-" || w == "--":
			continue
		case strings.HasPrefix(w, "--"):
			name, _, hasValue := strings.Cut(w[2:], "=")
			f := lookupFlag(cmd, name, "")
			if f == nil {
				problems = append(problems, fmt.Sprintf("unknown flag --%s for %q", name, cmd.CommandPath()))
			} else if !hasValue && takesValue(f) {
				i++
			}
		case w[0] == '-' && len(w) >= 2 && unicode.IsLetter(rune(w[1])):
			f := lookupFlag(cmd, "", w[1:2])
			if f == nil {
				problems = append(problems, fmt.Sprintf("unknown flag %s for %q", w[:2], cmd.CommandPath()))
			} else if len(w) == 2 && takesValue(f) {
				i++
			}
		case positional || !cmd.HasSubCommands():
			positional = true
		default:
			sub := subcommand(cmd, w)
			switch {
			case sub != nil:
				cmd = sub
			case placeholder(w):
				positional = true
			default:
				problems = append(problems, fmt.Sprintf("unknown command %q for %q", w, cmd.CommandPath()))
				return problems
			}
		}
	}
	return problems
}

// subcommand is cmd's subcommand named w, or by the first of the
// alternatives w lists as a/b/c.
func subcommand(cmd *cobra.Command, w string) *cobra.Command {
	first, _, _ := strings.Cut(w, "/")
	for _, c := range cmd.Commands() {
		if c.Name() == w || c.HasAlias(w) || c.Name() == first {
			return c
		}
	}
	return nil
}

// placeholder says whether w stands for an argument, as COMMAND or <name>.
func placeholder(w string) bool {
	return strings.HasPrefix(w, "<") || strings.ToUpper(w) == w
}

// lookupFlag finds a flag of cmd, its own or inherited, by name or by
// shorthand.
func lookupFlag(cmd *cobra.Command, name, short string) *pflag.Flag {
	for _, fs := range []*pflag.FlagSet{cmd.Flags(), cmd.InheritedFlags()} {
		if name != "" {
			if f := fs.Lookup(name); f != nil {
				return f
			}
		} else if f := fs.ShorthandLookup(short); f != nil {
			return f
		}
	}
	return nil
}

// takesValue says whether a flag reads the next word as its value.
func takesValue(f *pflag.Flag) bool {
	return f.NoOptDefVal == ""
}

// link is a relative link of a doc, at a line of the file.
type link struct {
	target string
	line   int
}

var (
	// inlineLink is [text](target) or ![alt](target "title").
	inlineLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// refLink is a reference definition: [name]: target.
	refLink = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:[ \t]*(\S+)(?:[ \t]+"[^"]*")?[ \t]*$`)
	// scheme starts an absolute URL.
	scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// outsideBlocks is markdown text with its fenced code blocks' lines, fences
// included, left empty, so that line numbers stay those of text.
func outsideBlocks(text string) string {
	lines := strings.Split(text, "\n")
	inBlock := false
	for i, l := range lines {
		if fence.MatchString(l) {
			inBlock = !inBlock
			lines[i] = ""
		} else if inBlock {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// relativeLinks returns the links of markdown text outside code, but those
// to another site.
func relativeLinks(text string) []link {
	lines := strings.Split(outsideBlocks(text), "\n")
	for i, l := range lines { // a span within a line: the line numbers stay
		lines[i] = inlineCode.ReplaceAllStringFunc(l, func(s string) string { return strings.Repeat(" ", len(s)) })
	}
	prose := strings.Join(lines, "\n")
	var out []link
	for _, re := range []*regexp.Regexp{inlineLink, refLink} {
		for _, m := range re.FindAllStringSubmatchIndex(prose, -1) {
			target := prose[m[2]:m[3]]
			if !scheme.MatchString(target) {
				out = append(out, link{target: target, line: strings.Count(prose[:m[0]], "\n") + 1})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b link) int { return a.line - b.line })
	return out
}

// checkLink says what is wrong with a link from the doc at from ("" when it
// resolves): the file it names must exist, and a #fragment into a markdown
// file must name one of its headings.
func checkLink(from, target string) string {
	if scheme.MatchString(target) {
		return ""
	}
	path, frag, _ := strings.Cut(target, "#")
	file := from
	if path != "" {
		file = filepath.Join(filepath.Dir(from), filepath.FromSlash(path))
		if _, err := os.Stat(file); err != nil {
			return "no such file " + file
		}
	}
	if frag == "" || !strings.HasSuffix(file, ".md") {
		return ""
	}
	text, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	if !slices.Contains(headingAnchors(string(text)), frag) {
		return fmt.Sprintf("no heading %q in %s", frag, file)
	}
	return ""
}

// heading is a markdown ATX heading.
var heading = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*\s*$`)

// headingAnchors lists the anchors a markdown renderer gives text's headings:
// lower case, spaces as hyphens, punctuation but hyphens and underscores
// dropped, a repeated anchor numbered -1, -2, ….
func headingAnchors(text string) []string {
	var out []string
	seen := map[string]int{}
	inBlock := false
	for _, l := range strings.Split(text, "\n") {
		if fence.MatchString(l) {
			inBlock = !inBlock
		}
		m := heading.FindStringSubmatch(l)
		if inBlock || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, n))
		} else {
			out = append(out, a)
		}
		seen[a]++
	}
	return out
}

// A flag a doc names alone in inline code (`--allow-host NAME`), outside a
// baton command line, is a flag of some baton command, unless it is one of
// the other tools' flags the docs name (otherTools).
func TestDocsFlagsNamedExist(t *testing.T) {
	t.Parallel()
	flags := allFlags(docsCheckRoot())
	checked := 0
	for _, d := range readDocs(t) {
		file, text := d.file, d.text
		for _, f := range namedFlags(string(text)) {
			checked++
			if !flags[f.text] && !otherToolsFlags[f.text] {
				t.Errorf("%s:%d: --%s is no flag of any baton command", file, f.line, f.text)
			}
		}
	}
	t.Logf("checked %d flags named in prose", checked)
	if checked < 30 {
		t.Errorf("checked %d flags named in the docs' prose: the extraction missed them", checked)
	}
	if got := namedFlags("Use `--no-such-flag 3`, or `baton serve --x`.\n\n```sh\n`--in-a-block`\n```\n"); len(got) != 1 || got[0].text != "no-such-flag" || flags["no-such-flag"] {
		t.Errorf("flags named in the sample: %v, want no-such-flag alone", got)
	}
}

// otherToolsFlags are the flags of other tools the docs name alone: the
// AWS CLI's and deploy/image.sh's.
var otherToolsFlags = map[string]bool{"endpoint-url": true, "attributes": true, "arch": true}

// allFlags is the set of flag names of root and every command under it.
func allFlags(root *cobra.Command) map[string]bool {
	out := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) { out[f.Name] = true })
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}

// flagSpan is an inline code span that starts with a long flag.
var flagSpan = regexp.MustCompile("^--([A-Za-z0-9][A-Za-z0-9-]*)")

// namedFlags lists the long flags markdown text names at the start of an
// inline code span outside code blocks.
func namedFlags(text string) []shown {
	prose := outsideBlocks(text)
	var out []shown
	for _, m := range inlineCode.FindAllStringSubmatchIndex(prose, -1) {
		if f := flagSpan.FindStringSubmatch(strings.TrimSpace(prose[m[2]:m[3]])); f != nil {
			out = append(out, shown{text: f[1], line: strings.Count(prose[:m[0]], "\n") + 1})
		}
	}
	return out
}

// Every BATON_* variable the docs name is one baton reads (readVariables),
// or one the repository's code,
// scripts or deploy files name (the tests' switches, the compose file's,
// BATON_ENDPOINT): a misspelt one, which nothing would read, fails.
func TestDocsVariablesNamedExist(t *testing.T) {
	t.Parallel()
	read := readVariables(docsCheckRoot())
	code := repositoryText(t)
	checked := 0
	for _, d := range readDocs(t) {
		file, text := d.file, d.text
		for _, v := range namedVariables(string(text)) {
			checked++
			if !read[v.text] && !strings.Contains(code, v.text) {
				t.Errorf("%s:%d: %s is no flag's variable, and no code, script or deploy file names it", file, v.line, v.text)
			}
		}
	}
	t.Logf("checked %d variables named", checked)
	if checked < 30 {
		t.Errorf("checked %d variables named in the docs: the extraction missed them", checked)
	}
	if got := namedVariables("Set BATON_ALLOW_HOSTS=x, not BATON_WORKER_ (a prefix)."); len(got) != 1 || got[0].text != "BATON_ALLOW_HOSTS" || read["BATON_ALLOW_HOSTS"] || strings.Contains(code, "BATON_ALLOW_HOSTS") {
		t.Errorf("variables named in the sample: %v, want BATON_ALLOW_HOSTS alone, which nothing names", got)
	}
}

// batonVariable is a BATON_* variable's name (not a prefix ending in _).
var batonVariable = regexp.MustCompile(`\bBATON_[A-Z0-9_]*[A-Z0-9]\b`)

// namedVariables lists the BATON_* variables text names.
func namedVariables(text string) []shown {
	var out []shown
	for _, m := range batonVariable.FindAllStringIndex(text, -1) {
		out = append(out, shown{text: text[m[0]:m[1]], line: strings.Count(text[:m[0]], "\n") + 1})
	}
	return out
}

// repositoryText is the text of the repository's files but its docs (Go
// sources, scripts, deploy and CI files), where a variable is read.
func repositoryText(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(docsRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != docsRoot && (strings.HasPrefix(n, ".") && n != ".ci" || n == "node_modules" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".md") || strings.HasSuffix(path, "_test.go") && strings.HasPrefix(d.Name(), "docs_") {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() > 1<<20 {
			return err
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		b.Write(text)
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Every BATON_* variable Baton's own files name (docs, deploy files,
// scripts, CI, code, and the switches its tests read) is one baton serve
// knows, so that none of them is warned of as unknown at start; and each
// of ownVariables is still named somewhere.
func TestOwnVariablesKnownToServe(t *testing.T) {
	t.Parallel()
	known := readVariables(docsCheckRoot())
	named := map[string]string{}
	warning := regexp.MustCompile(`(?m)^.*ignoring an environment variable baton does not read.*$`)
	for _, d := range readDocs(t) {
		// The warning's sample names a stray variable on purpose.
		for _, v := range namedVariables(warning.ReplaceAllString(string(d.text), "")) {
			named[v.text] = fmt.Sprintf("%s:%d", d.file, v.line)
		}
	}
	testSwitch := regexp.MustCompile(`"(BATON_[A-Z0-9_]*[A-Z0-9])"`)
	err := filepath.WalkDir(docsRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != docsRoot && (strings.HasPrefix(n, ".") && n != ".ci" || n == "node_modules" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".md") && filepath.Dir(path) != filepath.Join(docsRoot, "docs", "migrating") {
			return nil // readDocs's, above
		}
		info, err := d.Info()
		if err != nil || info.Size() > 1<<20 {
			return err
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, "_test.go") && strings.HasPrefix(d.Name(), "docs_") || path == filepath.Join(docsRoot, "internal", "cli", "envcheck.go") {
			return nil // the docs check's samples; ownVariables itself
		}
		if strings.HasSuffix(path, "_test.go") {
			// A test's switch is a whole string literal; its other names
			// ("BATON_STOR=…") may be strays on purpose.
			for _, m := range testSwitch.FindAllStringSubmatch(string(text), -1) {
				named[m[1]] = path
			}
			return nil
		}
		for _, v := range namedVariables(string(text)) {
			named[v.text] = fmt.Sprintf("%s:%d", path, v.line)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(named) < 40 {
		t.Fatalf("found %d variables named: the walk missed them", len(named))
	}
	for name, where := range named {
		if strays := strayVariables(known, []string{name + "=1"}); len(strays) > 0 {
			t.Errorf("%s: %s is named here but baton serve would warn of it as a variable it does not read: add it to ownVariables, or fix the name", where, name)
		}
	}
	for name := range ownVariables {
		if named[name] == "" {
			t.Errorf("ownVariables lists %s, which nothing names any more", name)
		}
		if known[name] {
			t.Errorf("ownVariables lists %s, which baton reads", name)
		}
	}
}

// A command that groups subcommands (baton queue, topic, store) lists in
// its short help, which `baton --help` shows, what they do: it names every
// one of them (each word of a name: finish-upgrade by "finish … upgrade"),
// so that none is found only by asking for the group's own help.
func TestGroupShortHelpNamesEverySubcommand(t *testing.T) {
	for _, group := range (Main{}).root().Commands() {
		words := strings.FieldsFunc(strings.ToLower(group.Short), func(r rune) bool { return !unicode.IsLetter(r) })
		for _, sub := range group.Commands() {
			for _, w := range strings.Split(sub.Name(), "-") {
				if !slices.Contains(words, w) {
					t.Errorf("baton %s's short help %q does not name its subcommand %s", group.Name(), group.Short, sub.Name())
					break
				}
			}
		}
	}
}
