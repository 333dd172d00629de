package storekit

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

// ServerName is a DNS name the test server certificate is valid for,
// besides 127.0.0.1 and localhost.
const ServerName = "kvblob-store.test"

// Certs are PEM files for a TLS test server, made by NewCerts: a CA, a
// server certificate it signed (valid for 127.0.0.1, localhost and
// ServerName, and usable as a client certificate between a Cluster's
// nodes), a client certificate it signed, and another CA that signed
// nothing here.
type Certs struct {
	CAFile                    string
	ServerCertFile, ServerKey string
	ClientCertFile, ClientKey string
	// OtherCAFile is a CA a client may be told to trust instead, which must
	// make it refuse the server.
	OtherCAFile string
	// Pool trusts the CA alone.
	Pool *x509.CertPool
}

// NewCerts makes a CA and its certificates with ECDSA P-256 keys, valid for
// a day, and writes them into dir (a test's t.TempDir()).
func NewCerts(dir string) (*Certs, error) {
	c := &Certs{
		CAFile: filepath.Join(dir, "ca.crt"), OtherCAFile: filepath.Join(dir, "other-ca.crt"),
		ServerCertFile: filepath.Join(dir, "server.crt"), ServerKey: filepath.Join(dir, "server.key"),
		ClientCertFile: filepath.Join(dir, "client.crt"), ClientKey: filepath.Join(dir, "client.key"),
	}
	ca, caKey, err := newCA("kvblob test CA", c.CAFile)
	if err != nil {
		return nil, err
	}
	c.Pool = x509.NewCertPool()
	c.Pool.AddCert(ca)
	if _, _, err := newCA("kvblob untrusted CA", c.OtherCAFile); err != nil {
		return nil, err
	}
	server := &x509.Certificate{
		Subject:     pkix.Name{CommonName: ServerName},
		DNSNames:    []string{ServerName, "localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if err := issue(server, ca, caKey, c.ServerCertFile, c.ServerKey); err != nil {
		return nil, err
	}
	client := &x509.Certificate{Subject: pkix.Name{CommonName: "kvblob test client"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if err := issue(client, ca, caKey, c.ClientCertFile, c.ClientKey); err != nil {
		return nil, err
	}
	return c, nil
}

func template(t *x509.Certificate) *x509.Certificate {
	t.SerialNumber, _ = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	t.NotBefore = time.Now().Add(-time.Hour)
	t.NotAfter = time.Now().Add(24 * time.Hour)
	t.KeyUsage |= x509.KeyUsageDigitalSignature
	return t
}

func newCA(name, file string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	t := template(&x509.Certificate{Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign})
	der, err := x509.CreateCertificate(rand.Reader, t, t, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, writePEM(file, "CERTIFICATE", der)
}

func issue(t, ca *x509.Certificate, caKey *ecdsa.PrivateKey, certFile, keyFile string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificate(rand.Reader, template(t), ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
		return err
	}
	return writePEM(keyFile, "EC PRIVATE KEY", kder)
}

func writePEM(file, typ string, der []byte) error {
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("storekit: writing %s: %w", file, err)
	}
	return nil
}

// TrustConfig is a client's TLS configuration that trusts the CA alone and
// presents no certificate.
func (c *Certs) TrustConfig() *tls.Config {
	return &tls.Config{RootCAs: c.Pool, MinVersion: tls.VersionTLS12}
}

// ClientConfig is TrustConfig presenting the client certificate, for a
// server that asks for one.
func (c *Certs) ClientConfig() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(c.ClientCertFile, c.ClientKey)
	if err != nil {
		return nil, err
	}
	cfg := c.TrustConfig()
	cfg.Certificates = []tls.Certificate{cert}
	return cfg, nil
}
