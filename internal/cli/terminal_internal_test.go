package cli

import (
	"os"
	"testing"
)

// Standard input from the null device, or from a pipe, is nobody typing.
func TestIsTerminalNotNullDeviceNorPipe(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if isTerminal(null) {
		t.Errorf("%s is taken for a terminal", os.DevNull)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(r) || isTerminal(w) {
		t.Error("a pipe is taken for a terminal")
	}
}
