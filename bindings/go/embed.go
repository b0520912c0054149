package pagoda

import "fmt"

// EmbedText returns the embedding of a text prompt (an embedding request, RequestEmbed): its
// hidden states after the model's final norm, pooled as pooling says and scaled as normalize
// says, the model's hidden size of float32. The zero values are the model's rules (what its
// sentence-transformers modules.json or GGUF pooling_type names; for a plain decoder the last
// token's state, at unit L2 norm). It runs the request to its end, stepping the engine as a
// Stream does (other requests advance meanwhile), and may be called from several goroutines.
func (e *Engine) EmbedText(text string, pooling Pooling,
	normalize EmbeddingNormalize) ([]float32, error) {
	return e.embed(func(o *RequestOptions) (*Stream, error) { return e.StreamText(text, o) },
		pooling, normalize)
}

// EmbedTokens returns the embedding of a prompt of token ids, as EmbedText does.
func (e *Engine) EmbedTokens(ids []int32, pooling Pooling,
	normalize EmbeddingNormalize) ([]float32, error) {
	return e.embed(func(o *RequestOptions) (*Stream, error) { return e.StreamTokens(ids, o) },
		pooling, normalize)
}

func (e *Engine) embed(stream func(*RequestOptions) (*Stream, error), pooling Pooling,
	normalize EmbeddingNormalize) ([]float32, error) {
	o := DefaultRequestOptions()
	o.Flags |= RequestEmbed
	o.Pooling = pooling
	o.EmbeddingNormalize = normalize
	s, err := stream(&o)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var vector []float32
	finish := FinishNone
	for s.Next() {
		// Output.Embedding is already a Go copy: the library's vector lives only until the
		// next poll.
		if v := s.Output().Embedding; v != nil {
			vector = v
		}
		finish = s.Output().FinishReason
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if vector == nil {
		status := StatusInternal // the library promises the vector on a normal finish
		if finish == FinishAborted {
			status = StatusCancelled
		}
		return nil, &Error{Status: status, Message: fmt.Sprintf(
			"embedding request %d ended (%v) without its vector", s.ID(), finish)}
	}
	return vector, nil
}
