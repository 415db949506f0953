"""The Hugging Face fine-tuning trainer that ``train()`` jobs run (hf_llm_training.py)."""
