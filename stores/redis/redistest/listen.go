package redistest

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Listening returns the address of every TCP socket the server's process
// listens on, read from /proc (Linux): the process's socket inodes from
// /proc/<pid>/fd, their local addresses from /proc/net/tcp and tcp6.
func (s *Server) Listening() ([]netip.AddrPort, error) {
	return listening(s.Pid())
}

func listening(pid int) ([]netip.AddrPort, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, fmt.Errorf("redistest: reading the server's sockets: %w", err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var out []netip.AddrPort
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		got, err := listenTable(table, inodes)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// listenTable parses one /proc/net/tcp* table: "sl local_address
// rem_address st ... inode", st 0A being LISTEN.
func listenTable(path string, inodes map[string]bool) ([]netip.AddrPort, error) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil // no IPv6 in this kernel
		}
		return nil, err
	}
	defer f.Close()
	var out []netip.AddrPort
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "0A" || !inodes[fields[9]] {
			continue
		}
		ap, err := parseProcAddr(fields[1])
		if err != nil {
			return nil, fmt.Errorf("redistest: %s: %w", path, err)
		}
		out = append(out, ap)
	}
	return out, sc.Err()
}

// parseProcAddr parses "0100007F:1F90": the address as 32-bit words in host
// (little-endian) order, then the port in hex.
func parseProcAddr(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("address %q has no port", s)
	}
	raw, err := hex.DecodeString(a)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("address %q", s)
	}
	for i := 0; i < len(raw); i += 4 { // each word is little-endian
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("port of %q: %w", s, err)
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}
