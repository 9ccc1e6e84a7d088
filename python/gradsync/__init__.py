"""gradsync from Python.

gradsync.models: the built-in models (`--model fashion_cnn|lenet|resnet18|mlp`)
as PyTorch modules whose state_dict keys and shapes match what a job
trains, so `gradsync model pull JOB --state-dict -o f.pt` loads with

    model = gradsync.models.fashion_cnn()
    model.load_state_dict(torch.load("f.pt", weights_only=True))
"""
