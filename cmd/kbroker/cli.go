package main

// Pieces shared by the admin commands: flag parsing with Kafka-style help,
// usage errors, output formats and progress on a terminal.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// usageError is a mistake in the command line (exit code 2).
type usageError string

func (e usageError) Error() string { return string(e) }

func usagef(format string, args ...any) error { return usageError(fmt.Sprintf(format, args...)) }

// errReported means the failures were already printed, one per resource;
// the command only has to exit non-zero.
var errReported = errors.New("failures reported")

// newFlagSet builds a subcommand's flag set whose --help prints synopsis,
// flags and examples.
func newFlagSet(name, synopsis, examples string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s\n\nFlags:\n", synopsis)
		printFlags(fs)
		fmt.Fprintf(fs.Output(), "\nExamples:\n%s", examples)
	}
	return fs
}

// parseFlags parses args, sends --help to out (exit 0) and turns other
// flag errors into usage errors; it refuses positional arguments.
func parseFlags(fs *flag.FlagSet, args []string, out io.Writer) error {
	if err := parseFlagsAndArgs(fs, args, out); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	return nil
}

// parseFlagsAndArgs is parseFlags leaving positional arguments in
// fs.Args() for the caller.
func parseFlagsAndArgs(fs *flag.FlagSet, args []string, out io.Writer) error {
	var buf strings.Builder
	fs.SetOutput(&buf)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(out)
		fs.Usage()
		return flag.ErrHelp
	}
	if err != nil {
		return usageError(withDoubleDash(err.Error()))
	}
	return nil
}

// goFlagName finds a flag name in the standard flag package's errors,
// which spell it with one dash ("flag provided but not defined: -x",
// "flag needs an argument: -x", "invalid value "v" for flag -x: …",
// "invalid boolean value "v" for -x: …").
var goFlagName = regexp.MustCompile(`(: |for flag |for )-([^-\s])`)

// withDoubleDash spells the flags of a flag error as Apache Kafka's tools
// name them, --name, as every --help here does.
func withDoubleDash(msg string) string { return goFlagName.ReplaceAllString(msg, "$1--$2") }

// flagGiven reports whether the flag was on the command line, which a
// default value cannot tell (Kafka's tools refuse an explicit bad value
// that, left out, would mean "the broker's default").
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// errorPrefix starts every error line a subcommand prints, whether the
// command returned the error or printed it among its results.
func errorPrefix(command string) string { return "kbroker " + command + ": " }

// stringList collects a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// formatFlag is --format text|json.
type formatFlag string

func (f *formatFlag) String() string { return string(*f) }
func (f *formatFlag) Set(v string) error {
	switch v {
	case "text", "json":
		*f = formatFlag(v)
		return nil
	}
	return fmt.Errorf("want text or json")
}

func registerFormat(fs *flag.FlagSet) *formatFlag {
	f := formatFlag("text")
	fs.Var(&f, "format", "output `format` of --describe/--list: text (as Apache Kafka's tools) or json")
	return &f
}

// writeJSON prints v indented, with a final newline.
func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// exactlyOne checks that exactly one of the named actions is set.
func exactlyOne(actions map[string]bool) (string, error) {
	var set, all []string
	for name, on := range actions {
		all = append(all, "--"+name)
		if on {
			set = append(set, "--"+name)
		}
	}
	if len(set) != 1 {
		slices.Sort(all)
		return "", usagef("exactly one of %s is required", strings.Join(all, ", "))
	}
	return strings.TrimPrefix(set[0], "--"), nil
}

// progress reports how far a long operation got, on stderr and only when
// stderr is a terminal (scripts and pipes get clean output).
type progress struct {
	w     io.Writer
	what  string
	total int
	shown bool
}

func newProgress(errOut io.Writer, what string, total int) *progress {
	p := &progress{what: what, total: total}
	if f, ok := errOut.(*os.File); ok && isTerminal(f) {
		p.w = f
	}
	return p
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (p *progress) update(done int) {
	if p.w == nil {
		return
	}
	fmt.Fprintf(p.w, "\r%s: %d/%d", p.what, done, p.total)
	p.shown = true
}

func (p *progress) finish() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func sortStrings(s []string) { slices.Sort(s) }

func isTopicExists(err error) bool { return errors.Is(err, kerr.TopicAlreadyExists) }

// printFlags lists the flags with Kafka's double dash.
func printFlags(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		if def := f.DefValue; def != "" && def != "false" && def != "-1" && def != "[]" {
			usage += fmt.Sprintf(" (default %s)", def)
		}
		fmt.Fprintf(fs.Output(), "%s\n    \t%s\n", line, usage)
	})
}
