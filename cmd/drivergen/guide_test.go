package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repoPath finds the paths of this repository a text names (spec/...,
// stores/..., internal/...), placeholders such as <store> left out.
var repoPath = regexp.MustCompile("(?:spec|stores|internal|conformance|runtime|cmd|generated|docs|scripts|gen)/[A-Za-z0-9_./-]*")

func pathsIn(text string) []string {
	var out []string
	for _, m := range repoPath.FindAllStringIndex(text, -1) {
		p := strings.TrimRight(text[m[0]:m[1]], ".,")
		if m[1] < len(text) && text[m[1]] == '<' {
			continue // stores/<store>/<store>kit
		}
		out = append(out, p)
	}
	return out
}

// scaffolded reports whether 'drivergen new store' (and 'make generate'
// after it) writes path, or a folder holding what it writes.
func scaffolded(store, path string) bool {
	path = strings.TrimSuffix(path, "/")
	written := []string{"generated/" + store + "/store.go", "generated/" + store + "/" + store + "cases/all.go"}
	for _, f := range scaffold(store) {
		written = append(written, f.path)
	}
	for _, w := range written {
		if w == path || strings.HasPrefix(w, path+"/") {
			return true
		}
	}
	return false
}

// TestNextStepsAgreeWithTheGuideAndTheTree: every path 'drivergen new'
// prints is one it writes or one in the tree, and the guide names the
// same kit folder and the same gate example.
func TestNextStepsAgreeWithTheGuideAndTheTree(t *testing.T) {
	guide, err := os.ReadFile("../../docs/writing-a-store.md")
	require.NoError(t, err)
	paths := pathsIn(nextSteps)
	require.NotEmpty(t, paths)
	for _, p := range paths {
		if strings.Contains(p, "STORE") {
			assert.True(t, scaffolded("STORE", p), "next steps name %s, which drivergen new does not write", p)
			continue
		}
		_, err := os.Stat(filepath.Join("..", "..", p))
		assert.NoError(t, err, "next steps name %s", p)
		assert.True(t, p == "docs/writing-a-store.md" || strings.Contains(string(guide), p), "next steps name %s; the guide does not", p)
	}
	for _, p := range pathsIn(strings.ReplaceAll(nextSteps, "STORE", "fs")) {
		p = strings.TrimSuffix(p, "/")
		assert.True(t, p == "docs/writing-a-store.md" || strings.Contains(string(guide), p), "next steps name %s (for fs); the guide does not", p)
	}
}

// TestTheGuideNamesTheTree: every path docs/writing-a-store.md names is
// in the tree or is one 'drivergen new fs' writes.
func TestTheGuideNamesTheTree(t *testing.T) {
	guide, err := os.ReadFile("../../docs/writing-a-store.md")
	require.NoError(t, err)
	for _, p := range pathsIn(string(guide)) {
		if scaffolded("fs", p) {
			continue
		}
		_, err := os.Stat(filepath.Join("..", "..", p))
		assert.NoError(t, err, "docs/writing-a-store.md names %s", p)
	}
}

// TestTheGuidesGoBlocksAreExcerpts: each Go block of
// docs/writing-a-store.md follows an "excerpt: FILE" marker (then, for
// docs' snippet test, the fragment marker) and is FILE's code, line by
// line (leading white space aside): a snippet that calls what does not
// exist, or that the store no longer does, fails here.
func TestTheGuidesGoBlocksAreExcerpts(t *testing.T) {
	guide, err := os.ReadFile("../../docs/writing-a-store.md")
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)(?:<!-- excerpt: (\\S+) -->\n(?:<!-- snippet: fragment -->\n)?)?```go\n(.*?)```").FindAllStringSubmatch(string(guide), -1)
	require.NotEmpty(t, blocks)
	for _, b := range blocks {
		file, code := b[1], b[2]
		if !assert.NotEmpty(t, file, "a Go block without an excerpt marker:\n%s", code) {
			continue
		}
		src, err := os.ReadFile(filepath.Join("..", "..", file))
		if !assert.NoError(t, err) {
			continue
		}
		assert.True(t, strings.Contains(trimLines(string(src)), trimLines(code)), "the guide's excerpt of %s is not in it:\n%s", file, code)
	}
}

func trimLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, "\n")
}
