package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFlagsAreChecked(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-duration", "0s"}, "-duration must be positive"},
		{[]string{"-attempts", "-1"}, "-attempts not negative"},
		{[]string{"-store", "ceph"}, `unknown store "ceph"`},
		{[]string{"-nope"}, "flag provided but not defined"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		assert.Equal(t, 2, run(c.args, &out, &errb), c.args)
		assert.Contains(t, errb.String(), c.want)
	}
}

func TestAShortRunPrintsTheReport(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"-duration", "5s", "-attempts", "50", "-seed", "3", "-store", "memory"}, &out, &errb)
	assert.Equal(t, 0, code, out.String())
	assert.Contains(t, out.String(), "soak: seed 3")
	assert.Contains(t, out.String(), "invariant violations: 0")
	assert.Contains(t, errb.String(), "soak: seed 3 for 5s")
}
