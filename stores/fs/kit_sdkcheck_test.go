package fs_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	fsgen "github.com/kvblob/kvblob/generated/fs"
	"github.com/kvblob/kvblob/generated/fs/fscases"
)

// SDKChecks ask the filesystem under the driver's root, not the driver,
// for what spec/fs-posix.yaml relies on: the operating system it was read
// from, the errno answers its rules map (EEXIST from an exclusive create,
// EISDIR from rename(2) over a directory, ENOENT from an absent file,
// ENOSPC from a full filesystem), and a rename that replaces an object
// whole while a reader holds the old one open. A filesystem that answers
// otherwise (an NFS mount without exclusive create, say) fails here,
// naming the rule.
func SDKChecks() []conformance.SDKCheck {
	pos := func(id string) string { return storekit.SpecPos(fscases.FsPosix(), id) }
	return []conformance.SDKCheck{
		{Name: "the_os_is_one_the_spec_holds_for", Run: func(h *conformance.Harness) {
			if !fsgen.FsPosix().SupportsVersion(runtime.GOOS) {
				h.T.Errorf("the spec holds for %v, and this is %s", fsgen.FsPosix().SDKVersions, runtime.GOOS)
			}
		}},
		{Name: "an_exclusive_create_of_a_present_file_answers_EEXIST", Spec: pos("claim/EEXIST"), Run: func(h *conformance.Harness) {
			p := filepath.Join(Parts(h.D).Root(), "marker")
			for i := 0; i < 2; i++ {
				f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
				if i == 0 && err == nil {
					_ = f.Close()
					continue
				}
				if i == 0 || !errors.Is(err, syscall.EEXIST) {
					h.T.Errorf("%s: O_CREAT|O_EXCL answered %v on try %d; the claim rule for EEXIST (NOT_READY) relies on EEXIST the second time", pos("claim/EEXIST"), err, i+1)
				}
			}
		}},
		{Name: "rename_over_a_directory_answers_EISDIR", Spec: pos("publish/EISDIR"), Run: func(h *conformance.Harness) {
			root := Parts(h.D).Root()
			if err := os.WriteFile(filepath.Join(root, "tmp"), nil, 0o644); err != nil {
				h.T.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(root, "object"), 0o755); err != nil {
				h.T.Fatal(err)
			}
			if err := syscall.Rename(filepath.Join(root, "tmp"), filepath.Join(root, "object")); err != syscall.EISDIR {
				h.T.Errorf("%s: rename(2) of a file over a directory answered %v; the publish rule for EISDIR relies on EISDIR", pos("publish/EISDIR"), err)
			}
		}},
		{Name: "open_of_an_absent_file_answers_ENOENT", Spec: pos("open/ENOENT"), Run: func(h *conformance.Harness) {
			_, err := os.Open(filepath.Join(Parts(h.D).Root(), "absent"))
			if !errors.Is(err, syscall.ENOENT) {
				h.T.Errorf("%s: open of an absent file answered %v; the open rule for ENOENT (MISS) relies on ENOENT", pos("open/ENOENT"), err)
			}
		}},
		{Name: "rename_replaces_a_file_whole_under_an_open_reader", Spec: pos("publish/OK"), Run: func(h *conformance.Harness) {
			root := Parts(h.D).Root()
			obj, tmp := filepath.Join(root, "object"), filepath.Join(root, "tmp")
			old, next := bytes.Repeat([]byte{1}, 8192), bytes.Repeat([]byte{2}, 4096)
			if err := os.WriteFile(obj, old, 0o644); err != nil {
				h.T.Fatal(err)
			}
			r, err := os.Open(obj)
			if err != nil {
				h.T.Fatal(err)
			}
			defer r.Close()
			if err := os.WriteFile(tmp, next, 0o644); err != nil {
				h.T.Fatal(err)
			}
			if err := syscall.Rename(tmp, obj); err != nil {
				h.T.Fatalf("rename(2) over a file: %v", err)
			}
			got, _ := os.ReadFile(obj)
			held := make([]byte, len(old)+1)
			n, _ := r.ReadAt(held, 0)
			if !bytes.Equal(got, next) || !bytes.Equal(held[:n], old) {
				h.T.Errorf("%s: after rename(2) over a file, a new open read %d bytes and the open reader %d: want the new object's %d and the old one's %d, each whole", pos("publish/OK"), len(got), n, len(next), len(old))
			}
		}},
		{Name: "a_full_filesystem_answers_ENOSPC", Spec: pos("write/ENOSPC"), Run: func(h *conformance.Harness) {
			k := Parts(h.D)
			if k.full == nil {
				h.T.Skipf("%s", NoMount)
			}
			if err := k.full(); err != nil {
				h.T.Fatal(err)
			}
			err := os.WriteFile(filepath.Join(k.Root(), "more"), make([]byte, 8192), 0o644)
			if !errors.Is(err, syscall.ENOSPC) {
				h.T.Errorf("%s: a write to a full tmpfs answered %v; the write rule for ENOSPC (DECLINED) relies on ENOSPC", pos("write/ENOSPC"), err)
			}
		}},
	}
}
