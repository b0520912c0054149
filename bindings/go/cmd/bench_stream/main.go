// Command bench_stream measures tokens per second streamed through the Go binding, as
// pagoda-bench-stream does through the C API, so that the two can be compared on one model:
// greedy, end-of-sequence ignored, one request at a time; each repeat submits, then steps and
// polls until the request finishes, counting the tokens polled and reading each output's text
// as a streaming user would. It prints one line `tokens_per_s <float>` per repeat.
//
//	bench_stream --model PATH --prompt TEXT --max-tokens N --repeats R [--paced]
//
// With --paced, each repeat waits for a line on standard input, until its end (as the C
// benchmark's --paced).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"time"

	"pagoda.dev/pagoda"
	"pagoda.dev/pagoda/internal/cpuengine"
)

func main() {
	model := flag.String("model", "", "GGUF file or Hugging Face folder")
	prompt := flag.String("prompt", "Once upon a time", "prompt text")
	maxTokens := flag.Int("max-tokens", 256, "tokens per request")
	repeats := flag.Int("repeats", 5, "requests, one after the other")
	paced := flag.Bool("paced", false, "one request per line of standard input, until its end")
	flag.Parse()
	if *model == "" || *maxTokens < 1 || *repeats < 1 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: bench_stream --model PATH --prompt TEXT --max-tokens N --repeats R [--paced]")
		os.Exit(2)
	}
	if err := run(*model, *prompt, int32(*maxTokens), *repeats, *paced); err != nil {
		fmt.Fprintln(os.Stderr, "bench_stream:", err)
		os.Exit(1)
	}
}

func run(modelPath, prompt string, maxTokens int32, repeats int, paced bool) error {
	engine, err := cpuengine.Open(modelPath)
	if err != nil {
		return err
	}
	defer engine.Close()

	opts := pagoda.DefaultRequestOptions()
	opts.Temperature = 0
	opts.MaxTokens = maxTokens
	opts.Flags |= pagoda.RequestIgnoreEOS
	lines := bufio.NewScanner(os.Stdin)
	for r := 0; (paced && lines.Scan()) || (!paced && r < repeats); r++ {
		start := time.Now()
		stream, err := engine.StreamText(prompt, &opts)
		if err != nil {
			return err
		}
		tokens, textBytes := 0, 0
		for stream.Next() {
			out := stream.Output()
			tokens += len(out.TokenIDs)
			textBytes += len(out.Text)
		}
		elapsed := time.Since(start).Seconds()
		if err := stream.Err(); err != nil {
			return err
		}
		if tokens != int(maxTokens) || textBytes == 0 {
			return fmt.Errorf("repeat %d streamed %d tokens (%d bytes of text), want %d", r, tokens, textBytes, maxTokens)
		}
		fmt.Printf("tokens_per_s %.1f\n", float64(tokens)/elapsed)
	}
	return nil
}
