// Command tlogcheck checks alter-publish's transparency log output with Go's
// golang.org/x/mod/sumdb/note and golang.org/x/mod/sumdb/tlog, an implementation
// independent of alter-publish's (the tests' oracle).
//
//	tlogcheck dir DIR VKEY [OLD_CHECKPOINT_FILE...]
//	    opens DIR/checkpoint with VKEY, reads the tree through DIR's C2SP tiles
//	    (tlog.TileHashReader checks every tile it loads against the root), checks
//	    every entry of the entry bundles with tlog.ProveRecord and tlog.CheckRecord,
//	    and that the checkpoint extends each old one (tlog.ProveTree, tlog.CheckTree).
//	tlogcheck proofs VKEY < REQUEST.json
//	    checks the given inclusion proofs (tlog.CheckRecord) and consistency proofs
//	    (tlog.CheckTree) against checkpoints opened with VKEY.
//
// It prints "ok" and exits 0, or prints the first problem and exits 1.
package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

const height = 8

type checkpoint struct {
	origin string
	size   int64
	root   tlog.Hash
}

func open(text []byte, vkey string) (checkpoint, error) {
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		return checkpoint{}, fmt.Errorf("verifier key: %v", err)
	}
	n, err := note.Open(text, note.VerifierList(verifier))
	if err != nil {
		return checkpoint{}, fmt.Errorf("note.Open: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(n.Text, "\n"), "\n")
	if len(lines) < 3 {
		return checkpoint{}, fmt.Errorf("checkpoint has %d lines", len(lines))
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return checkpoint{}, fmt.Errorf("checkpoint size: %v", err)
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize {
		return checkpoint{}, fmt.Errorf("checkpoint root %q", lines[2])
	}
	var root tlog.Hash
	copy(root[:], raw)
	return checkpoint{lines[0], size, root}, nil
}

// c2spPath is t's path as C2SP tlog-tiles writes it (no height element; entry
// bundles under "entries").
func c2spPath(t tlog.Tile) string {
	path := strings.Replace(t.Path(), fmt.Sprintf("tile/%d/", height), "tile/", 1)
	return strings.Replace(path, "tile/data/", "tile/entries/", 1)
}

type dirReader struct{ dir string }

func (r dirReader) Height() int { return height }

func (r dirReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	data := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := os.ReadFile(filepath.Join(r.dir, c2spPath(t)))
		if err != nil {
			return nil, err
		}
		data[i] = b
	}
	return data, nil
}

func (r dirReader) SaveTiles(tiles []tlog.Tile, data [][]byte) {}

func decodeBundle(b []byte) ([][]byte, error) {
	var entries [][]byte
	for len(b) > 0 {
		if len(b) < 2 {
			return nil, fmt.Errorf("bundle ends inside a length")
		}
		n := int(b[0])<<8 | int(b[1])
		if len(b) < 2+n {
			return nil, fmt.Errorf("bundle ends inside an entry")
		}
		entries = append(entries, b[2:2+n])
		b = b[2+n:]
	}
	return entries, nil
}

func checkDir(dir, vkey string, olds []string) error {
	text, err := os.ReadFile(filepath.Join(dir, "checkpoint"))
	if err != nil {
		return err
	}
	c, err := open(text, vkey)
	if err != nil {
		return err
	}
	reader := tlog.TileHashReader(tlog.Tree{N: c.size, Hash: c.root}, dirReader{dir})
	root, err := tlog.TreeHash(c.size, reader)
	if err != nil {
		return fmt.Errorf("tree hash: %v", err)
	}
	if root != c.root {
		return fmt.Errorf("tree hash %v, checkpoint says %v", root, c.root)
	}
	for start := int64(0); start < c.size; start += 1 << height {
		tile := tlog.Tile{H: height, L: -1, N: start >> height, W: 1 << height}
		if c.size-start < 1<<height {
			tile.W = int(c.size - start)
		}
		bundle, err := os.ReadFile(filepath.Join(dir, c2spPath(tile)))
		if err != nil {
			return err
		}
		entries, err := decodeBundle(bundle)
		if err != nil {
			return err
		}
		if len(entries) != tile.W {
			return fmt.Errorf("%s has %d entries, not %d", c2spPath(tile), len(entries), tile.W)
		}
		for i, entry := range entries {
			index := start + int64(i)
			proof, err := tlog.ProveRecord(c.size, index, reader)
			if err != nil {
				return fmt.Errorf("prove record %d: %v", index, err)
			}
			if err := tlog.CheckRecord(proof, c.size, c.root, index, tlog.RecordHash(entry)); err != nil {
				return fmt.Errorf("record %d: %v", index, err)
			}
		}
	}
	for _, name := range olds {
		oldText, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		old, err := open(oldText, vkey)
		if err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		proof, err := tlog.ProveTree(c.size, old.size, reader)
		if err != nil {
			return fmt.Errorf("prove tree %d: %v", old.size, err)
		}
		if err := tlog.CheckTree(proof, c.size, c.root, old.size, old.root); err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
	}
	return nil
}

type request struct {
	Records []struct {
		Index      int64    `json:"index"`
		Entry      string   `json:"entry"`
		Proof      []string `json:"proof"`
		Checkpoint string   `json:"checkpoint"`
	} `json:"records"`
	Trees []struct {
		Old   string   `json:"old"`
		New   string   `json:"new"`
		Proof []string `json:"proof"`
	} `json:"trees"`
}

func hashes(encoded []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(encoded))
	for i, s := range encoded {
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(raw) != tlog.HashSize {
			return nil, fmt.Errorf("bad hash %q", s)
		}
		copy(out[i][:], raw)
	}
	return out, nil
}

func checkProofs(vkey string) error {
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		return err
	}
	for _, r := range req.Records {
		c, err := open([]byte(r.Checkpoint), vkey)
		if err != nil {
			return err
		}
		entry, err := base64.StdEncoding.DecodeString(r.Entry)
		if err != nil {
			return err
		}
		proof, err := hashes(r.Proof)
		if err != nil {
			return err
		}
		if err := tlog.CheckRecord(proof, c.size, c.root, r.Index, tlog.RecordHash(entry)); err != nil {
			return fmt.Errorf("record %d in tree %d: %v", r.Index, c.size, err)
		}
	}
	for _, t := range req.Trees {
		old, err := open([]byte(t.Old), vkey)
		if err != nil {
			return err
		}
		c, err := open([]byte(t.New), vkey)
		if err != nil {
			return err
		}
		proof, err := hashes(t.Proof)
		if err != nil {
			return err
		}
		if err := tlog.CheckTree(proof, c.size, c.root, old.size, old.root); err != nil {
			return fmt.Errorf("tree %d -> %d: %v", old.size, c.size, err)
		}
	}
	return nil
}

func main() {
	var err error
	switch {
	case len(os.Args) >= 4 && os.Args[1] == "dir":
		err = checkDir(os.Args[2], os.Args[3], os.Args[4:])
	case len(os.Args) == 3 && os.Args[1] == "proofs":
		err = checkProofs(os.Args[2])
	default:
		err = fmt.Errorf("usage: tlogcheck dir DIR VKEY [OLD...] | tlogcheck proofs VKEY < REQUEST")
	}
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("ok")
}
