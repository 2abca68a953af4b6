"""ReasoningConfig: the seed's variables, validated with the variable named in the error."""

import pytest

from reasoning import ConfigError, ExecutionStrategy, ReasoningConfig


def test_defaults_match_the_seed():
    config = ReasoningConfig()
    assert (config.max_iterations, config.min_confidence) == (3, 0.7)
    assert (config.simple_threshold, config.complex_threshold) == (0.3, 0.7)
    assert (config.min_quality_direct, config.min_quality_light, config.min_quality_deep) == (0.6, 0.7, 0.5)
    assert config.analysis_cache_ttl == 3600 and config.cache_analysis and config.force_strategy is None


def test_reads_the_seed_variable_names():
    config = ReasoningConfig.from_env(
        {
            "MAX_REASONING_ITERATIONS": "5",
            "MIN_CONFIDENCE": "0.6",
            "SIMPLE_THRESHOLD": "0.2",
            "COMPLEX_THRESHOLD": "0.8",
            "MIN_QUALITY_DIRECT": "0.65",
            "MIN_QUALITY_LIGHT": "0.75",
            "MIN_QUALITY_DEEP": "0.55",
            "CLAUDE_MODEL": "claude-opus-4-5",
            "ANALYSIS_MODEL": "claude-haiku-4-5",
            "PLANNING_MODEL": "claude-sonnet-4-6",
            "FORCE_REASONING_STRATEGY": "deep",
            "DEBUG": "true",
        }
    )
    assert config.max_iterations == 5 and config.min_quality_light == 0.75
    assert config.quality_threshold(ExecutionStrategy.DEEP_REASONING) == 0.55
    assert config.model_for("analysis") == "claude-haiku-4-5"
    assert config.model_for("planning") == "claude-sonnet-4-6"
    assert config.model_for("evaluation") == "claude-opus-4-5"
    assert config.force_strategy == ExecutionStrategy.DEEP_REASONING and config.debug_mode


def test_openai_and_offline_providers_use_their_own_default_models():
    assert (
        ReasoningConfig.from_env({"OPENAI_MODEL": "llama3"}, provider="openai").model_for("analysis")
        == "llama3"
    )
    assert ReasoningConfig.from_env({}, provider="offline").model_for("analysis") == "nexus-offline"


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"MAX_REASONING_ITERATIONS": "many"}, "MAX_REASONING_ITERATIONS"),
        ({"MAX_REASONING_ITERATIONS": "0"}, "MAX_REASONING_ITERATIONS"),
        ({"MIN_QUALITY_DIRECT": "1.5"}, "MIN_QUALITY_DIRECT"),
        ({"MIN_CONFIDENCE": "-0.1"}, "MIN_CONFIDENCE"),
        ({"SIMPLE_THRESHOLD": "0.8"}, "SIMPLE_THRESHOLD"),
        ({"FORCE_REASONING_STRATEGY": "sideways"}, "FORCE_REASONING_STRATEGY"),
        ({"CACHE_ANALYSIS": "maybe"}, "CACHE_ANALYSIS"),
        ({"ANALYSIS_CACHE_TTL": "-5"}, "ANALYSIS_CACHE_TTL"),
        ({"EXECUTION_STYLE": "chaotic"}, "EXECUTION_STYLE"),
    ],
)
def test_a_bad_value_names_its_variable(env, variable):
    with pytest.raises(ConfigError) as error:
        ReasoningConfig.from_env(env)
    assert error.value.variable == variable
    assert variable in str(error.value)
