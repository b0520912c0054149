// Command stream_story streams a story from a model (the bundled stories260K by default) through
// the Go binding, printing each piece of text as the engine produces it.
//
//	stream_story [--model PATH] [--prompt TEXT] [--max-tokens N] [--temperature T] [--seed S]
package main

import (
	"flag"
	"fmt"
	"os"

	"pagoda.dev/pagoda"
	"pagoda.dev/pagoda/internal/cpuengine"
)

func main() {
	model := flag.String("model", os.Getenv("PAGODA_TEST_MODEL"), "GGUF file or Hugging Face folder (default: $PAGODA_TEST_MODEL)")
	prompt := flag.String("prompt", "Once upon a time", "the story's beginning")
	maxTokens := flag.Int("max-tokens", 200, "tokens to generate at most")
	temperature := flag.Float64("temperature", 0, "0 = greedy")
	seed := flag.Uint64("seed", 0, "random seed, for temperature > 0")
	flag.Parse()
	if *model == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "stream_story: give --model PATH (or set PAGODA_TEST_MODEL)")
		os.Exit(2)
	}
	if err := run(*model, *prompt, int32(*maxTokens), float32(*temperature), *seed); err != nil {
		fmt.Fprintln(os.Stderr, "stream_story:", err)
		os.Exit(1)
	}
}

func run(modelPath, prompt string, maxTokens int32, temperature float32, seed uint64) error {
	if err := pagoda.CheckVersion(); err != nil {
		return err
	}
	engine, err := cpuengine.Open(modelPath)
	if err != nil {
		return err
	}
	defer engine.Close()

	opts := pagoda.DefaultRequestOptions()
	opts.MaxTokens = maxTokens
	opts.Temperature = temperature
	opts.Seed = seed
	stream, err := engine.StreamText(prompt, &opts)
	if err != nil {
		return err
	}
	defer stream.Close()
	fmt.Print(prompt)
	var last pagoda.Output
	for stream.Next() {
		last = stream.Output()
		fmt.Print(last.Text)
	}
	fmt.Println()
	if err := stream.Err(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "[%d prompt tokens, %d generated, finished: %v]\n", last.NPromptTokens,
		last.NGenerated, last.FinishReason)
	return nil
}
