"""What a person reads: study results, the study page, the validation page and the case studies."""
