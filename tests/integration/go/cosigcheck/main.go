// Command cosigcheck checks a cosigned checkpoint with Go's golang.org/x/mod/sumdb/note,
// an implementation independent of alter-publish's (the tests' oracle).
//
//	cosigcheck FILE LOG_VKEY [WITNESS_VKEY...]
//
// note.Open verifies the log's Ed25519 signature (type 0x01) itself. The note package
// knows no other signature type, so each witness key (type 0x04) is given to it as a
// note.Verifier written here from c2sp.org/tlog-cosignature: the key hash is
// SHA-256(name || 0x0A || 0x04 || public key)[:4], the signature an 8-octet big-endian
// timestamp then Ed25519 over "cosignature/v1\ntime <timestamp>\n" and the note text.
// Every witness must have a verified cosignature. It prints "ok" and each cosignature's
// "name timestamp", or the first problem (exit 1).
package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

type cosigVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
	seen *uint64
}

func (v cosigVerifier) Name() string    { return v.name }
func (v cosigVerifier) KeyHash() uint32 { return v.hash }

func (v cosigVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	ts := binary.BigEndian.Uint64(sig[:8])
	signed := append([]byte(fmt.Sprintf("cosignature/v1\ntime %d\n", ts)), msg...)
	if !ed25519.Verify(v.key, signed, sig[8:]) {
		return false
	}
	*v.seen = ts
	return true
}

func newCosigVerifier(vkey string) (cosigVerifier, error) {
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 {
		return cosigVerifier{}, fmt.Errorf("witness key %q: not name+hash+key", vkey)
	}
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(raw) != 1+ed25519.PublicKeySize || raw[0] != 0x04 {
		return cosigVerifier{}, fmt.Errorf("witness key %q: not a cosignature/v1 key", vkey)
	}
	digest := sha256.Sum256(append([]byte(parts[0]+"\n"), raw...))
	if hex.EncodeToString(digest[:4]) != strings.ToLower(parts[1]) {
		return cosigVerifier{}, fmt.Errorf("witness key %q: key hash does not match", vkey)
	}
	return cosigVerifier{parts[0], binary.BigEndian.Uint32(digest[:4]), raw[1:], new(uint64)}, nil
}

func check(args []string) error {
	text, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	logKey, err := note.NewVerifier(args[1])
	if err != nil {
		return fmt.Errorf("log key: %v", err)
	}
	verifiers := []note.Verifier{logKey}
	var witnesses []cosigVerifier
	for _, vkey := range args[2:] {
		w, err := newCosigVerifier(vkey)
		if err != nil {
			return err
		}
		witnesses = append(witnesses, w)
		verifiers = append(verifiers, w)
	}
	n, err := note.Open(text, note.VerifierList(verifiers...))
	if err != nil {
		return fmt.Errorf("note.Open: %v", err)
	}
	verified := map[string]bool{}
	for _, s := range n.Sigs {
		verified[fmt.Sprintf("%s/%08x", s.Name, s.Hash)] = true
	}
	if !verified[fmt.Sprintf("%s/%08x", logKey.Name(), logKey.KeyHash())] {
		return fmt.Errorf("no verified log signature")
	}
	var lines []string
	for _, w := range witnesses {
		if !verified[fmt.Sprintf("%s/%08x", w.name, w.hash)] {
			return fmt.Errorf("no verified cosignature by %s", w.name)
		}
		lines = append(lines, fmt.Sprintf("%s %d", w.name, *w.seen))
	}
	fmt.Println("ok")
	for _, line := range lines {
		fmt.Println(line)
	}
	return nil
}

func main() {
	if len(os.Args) < 3 {
		fmt.Println("usage: cosigcheck FILE LOG_VKEY [WITNESS_VKEY...]")
		os.Exit(1)
	}
	if err := check(os.Args[1:]); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
}
