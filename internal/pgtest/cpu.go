package pgtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is Linux's unit of process times in /proc (USER_HZ), 100 on
// every architecture Go supports.
const clockTicks = 100

// CPUTime returns the processor time the server has used so far, user and
// system: its processes' own, and that of the backends that have exited
// (which the postmaster has reaped). It reads /proc, so Linux only. Two
// readings around a measurement give the database's share of its cost,
// which a busy machine disturbs far less than it does a rate.
func (c *Cluster) CPUTime() (time.Duration, error) {
	pid := c.cmd.Process.Pid
	ticks, err := procTicks(pid, true)
	if err != nil {
		return 0, err
	}
	for _, child := range children(pid) {
		t, err := procTicks(child, false)
		if err != nil {
			continue // exited meanwhile: the postmaster's reaped time has it, or will
		}
		ticks += t
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// procTicks reads a process's user and system time from /proc, with its
// reaped children's if reaped.
func procTicks(pid int, reaped bool) (int64, error) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	// pid (comm) state ppid …: utime, stime, cutime and cstime are the
	// 14th to 17th fields, the 12th to 15th after comm.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 15 {
		return 0, fmt.Errorf("pgtest: /proc/%d/stat: %d fields", pid, len(fields))
	}
	last := 12
	if reaped {
		last = 14
	}
	var sum int64
	for _, f := range fields[11 : last+1] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("pgtest: /proc/%d/stat: %w", pid, err)
		}
		sum += n
	}
	return sum, nil
}
