package s3kit

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Certs are a test CA (in memory) and a server certificate it signed for
// 127.0.0.1 and localhost, written as PEM files for versitygw.
type Certs struct {
	CertFile, KeyFile string
	// Pool trusts the test CA alone.
	Pool *x509.CertPool
}

// NewCerts makes a CA and a server certificate with ECDSA P-256 keys, valid
// for a day, and writes the server's into dir.
func NewCerts(dir string) (*Certs, error) {
	tmpl := func(t *x509.Certificate) *x509.Certificate {
		t.SerialNumber, _ = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
		t.NotBefore, t.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
		t.KeyUsage |= x509.KeyUsageDigitalSignature
		return t
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caT := tmpl(&x509.Certificate{Subject: pkix.Name{CommonName: "kvblob s3 test CA"}, IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign})
	caDER, err := x509.CreateCertificate(rand.Reader, caT, caT, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	srv := tmpl(&x509.Certificate{
		Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	der, err := x509.CreateCertificate(rand.Reader, srv, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	c := &Certs{CertFile: filepath.Join(dir, "server.crt"), KeyFile: filepath.Join(dir, "server.key"), Pool: x509.NewCertPool()}
	c.Pool.AddCert(ca)
	for file, b := range map[string]*pem.Block{c.CertFile: {Type: "CERTIFICATE", Bytes: der}, c.KeyFile: {Type: "EC PRIVATE KEY", Bytes: kder}} {
		if err := os.WriteFile(file, pem.EncodeToMemory(b), 0o600); err != nil {
			return nil, fmt.Errorf("s3kit: writing %s: %w", file, err)
		}
	}
	return c, nil
}

// TLSConfig trusts the test CA alone.
func (c *Certs) TLSConfig() *tls.Config {
	return &tls.Config{RootCAs: c.Pool, MinVersion: tls.VersionTLS12}
}
