//go:build !unix

package worker

import (
	"errors"
	"os/exec"
	"syscall"
)

const (
	sigTerm = syscall.Signal(15)
	sigKill = syscall.Signal(9)
)

func checkCommandSupport() error {
	return errors.New("worker: command targets need a Unix system (process groups and /bin/sh)")
}

func ownProcessGroup(*exec.Cmd) {}

func signalGroup(int, syscall.Signal) {}
