package gen

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// The spec's YAML comments are part of what it says: generated code carries
// them into its doc comments (the file's head into the spec value's doc,
// a code's into its constant's, a call's above its field of Calls, an
// answer's beside its rule), so a reader of the Go reads what the spec's
// author wrote beside each rule. The text is taken from the YAML as written, in file
// order, so generation stays deterministic.

// answerFields are the fields of a call that are answers: their comments
// are the answers', not the call's.
var answerFields = map[string]bool{"whole": true, "short": true, "codes": true, "otherwise": true}

// fileComment is the comment at the head of a spec: above the document, or
// above its first key.
func fileComment(root *yaml.Node) string {
	parts := []string{root.HeadComment}
	if len(root.Content) == 1 {
		doc := root.Content[0]
		parts = append(parts, doc.HeadComment)
		if doc.Kind == yaml.MappingNode && len(doc.Content) > 0 {
			parts = append(parts, doc.Content[0].HeadComment)
		}
	}
	return commentText(parts...)
}

// entryComment is the comment of one mapping entry, key k and value v: the
// lines above the key, the key's and the value's line comments, and, for a
// mapping value, the comments of its fields and their values, in file
// order. A field named in answers is left out (its comments are its
// answers'), but for the comments above and beside a "codes" key.
func entryComment(k, v *yaml.Node, answers map[string]bool) string {
	var parts []string
	var walk func(k, v *yaml.Node, deep bool)
	walk = func(k, v *yaml.Node, deep bool) {
		if k != nil {
			parts = append(parts, k.HeadComment, k.LineComment)
		}
		if v == nil {
			return
		}
		if k == nil || deep {
			parts = append(parts, v.HeadComment)
		}
		parts = append(parts, v.LineComment)
		if !deep {
			return
		}
		switch v.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(v.Content); i += 2 {
				fk, fv := v.Content[i], v.Content[i+1]
				if answers[fk.Value] {
					// The comments above and beside "codes:" are about the
					// call's code table; those of whole, short and otherwise
					// are their answers'.
					if fk.Value == "codes" {
						parts = append(parts, fk.HeadComment, fk.LineComment, fv.LineComment)
					}
					continue
				}
				walk(fk, fv, true)
			}
		case yaml.SequenceNode:
			for _, e := range v.Content {
				walk(nil, e, true)
			}
		}
	}
	walk(k, v, true)
	return commentText(parts...)
}

// commentText joins YAML comments into doc text: "#" and one space are
// stripped from each line, a bare "#" is a paragraph break, and each part
// (one comment block of the YAML) is a paragraph of its own; empty parts
// are left out.
func commentText(parts ...string) string {
	var lines []string
	for _, p := range parts {
		if strings.TrimSpace(p) == "" {
			continue
		}
		if len(lines) > 0 {
			lines = append(lines, "")
		}
		for _, line := range strings.Split(p, "\n") {
			line = strings.TrimSpace(line)
			line = strings.TrimPrefix(line, "#")
			line = strings.TrimPrefix(line, " ")
			lines = append(lines, strings.TrimRight(line, " \t"))
		}
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n")
}

// mappingKeys returns the key nodes of mapping n by name (none when n is
// not a mapping).
func mappingKeys(n *yaml.Node) map[string]*yaml.Node {
	keys := map[string]*yaml.Node{}
	if n.Kind != yaml.MappingNode {
		return keys
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		keys[n.Content[i].Value] = n.Content[i]
	}
	return keys
}
